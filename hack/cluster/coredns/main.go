// The test cluster's DNS server: CoreDNS with only the plugins a node's pods need (the
// kubernetes plugin for service and pod names, bind, errors, log, health, ready, cache).
// Nothing forwards: a name outside the cluster's zones fails (SERVFAIL), so no query leaves
// this machine.
// Built by hack/cluster/build.sh when a real node is asked for (docs/control-plane.md).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	// The order in which a query passes the plugins (CoreDNS's plugin.cfg order).
	dnsserver.Directives = []string{"bind", "errors", "log", "health", "ready", "cache", "kubernetes"}
}

func main() { coremain.Run() }
