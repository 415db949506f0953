// Unit tests for what stands in for cluster objects on this machine: env files, ConfigMaps and
// Secrets given as folders, volumes as local folders (emptyDir, hostPath, configMap, secret,
// --volume), mount paths rewritten, and the errors that name the field.
#include "local/volumes.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "api/manifest.h"
#include "api/test_manifest.h"
#include "local/launch.h"
#include "local/local_config.h"

namespace trainctl::local {
namespace {

namespace fs = std::filesystem;

using api::test::LoadJob;

// A one-Master PyTorchJob whose container and pod spec get the given YAML (indented to fit).
api::Job WithPod(const std::string& container_extra, const std::string& pod_extra) {
  return LoadJob(
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: vol}\nspec:\n"
      "  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n      template:\n        spec:\n" +
      pod_extra +
      "          containers:\n          - name: pytorch\n            image: t\n"
      "            command: [\"true\", \"--data=/data/train\", \"/database\", \"/data\"]\n" +
      container_extra);
}

const char* kMounts = R"(            volumeMounts:
            - {name: data, mountPath: /data}
            - {name: cfg, mountPath: /etc/app/}
            - {name: scratch, mountPath: /scratch, subPath: run1}
)";

std::string Volumes(const std::string& data_source) {
  return "          volumes:\n          - {name: data, " + data_source +
         "}\n          - {name: cfg, configMap: {name: app-config, items: [{key: a.yaml, path: "
         "conf/a.yaml}]}}\n          - {name: scratch, emptyDir: {}}\n";
}

TEST(EnvFile, ParsesKeyValueLinesAndNamesTheLineThatIsWrong) {
  auto vars = ParseEnvFile("# comment\n\nA=1\nexport B=\"two words\"\nC='x=y'\nD=\r\n", "my.env");
  ASSERT_TRUE(vars.ok()) << vars.status().message();
  ASSERT_EQ(vars->size(), 4u);
  EXPECT_EQ((*vars)[1], std::make_pair(std::string("B"), std::string("two words")));
  EXPECT_EQ((*vars)[2], std::make_pair(std::string("C"), std::string("x=y")));
  EXPECT_EQ((*vars)[3].second, "");
  auto bad = ParseEnvFile("A=1\njust words\n", "my.env");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("my.env:2:"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(ParseNameDir("nodir", "--configmap").ok());
  EXPECT_EQ(ParseNameDir("cfg=./dir", "--configmap")->second, "./dir");
}

TEST(PlanMounts, EachVolumeKindBecomesALocalFolder) {
  LocalConfig config;
  config.config_maps["app-config"] = {{"a.yaml", "x: 1\n"}, {"b.yaml", "unused"}};
  api::Job job = WithPod(kMounts, Volumes("hostPath: {path: /srv/data}"));
  auto mounts = PlanMounts(job, "Master", 0, "/state/job", config);
  ASSERT_TRUE(mounts.ok()) << mounts.status().message();
  ASSERT_EQ(mounts->size(), 3u);
  std::map<std::string, LocalMount> by_volume;
  for (const LocalMount& m : *mounts) by_volume[m.volume] = m;
  EXPECT_EQ(by_volume["data"].local_path, "/srv/data");
  EXPECT_EQ(by_volume["cfg"].mount_path, "/etc/app") << "a trailing slash is dropped";
  EXPECT_EQ(by_volume["cfg"].local_path, "/state/job/volumes/vol-master-0/cfg");
  EXPECT_EQ(by_volume["cfg"].files, (KeyValues{{"conf/a.yaml", "x: 1\n"}})) << "items honoured";
  EXPECT_EQ(by_volume["scratch"].local_path, "/state/job/volumes/vol-master-0/scratch/run1");
  EXPECT_EQ((*mounts)[2].volume, "data") << "longest mount path first";

  config.volume_dirs["data"] = "/home/me/data";
  auto given = PlanMounts(job, "Master", 0, "/state/job", config);
  ASSERT_TRUE(given.ok());
  for (const LocalMount& m : *given) {
    if (m.volume == "data") {
      EXPECT_EQ(m.local_path, "/home/me/data") << "--volume wins";
    }
  }
}

TEST(PlanMounts, WhatCannotBeHadHereIsRefusedNamingTheFieldAndTheWayOut) {
  LocalConfig config;
  config.config_maps["app-config"] = {{"a.yaml", ""}};
  auto pvc = PlanMounts(WithPod(kMounts, Volumes("persistentVolumeClaim: {claimName: c}")),
                        "Master", 0, "/s", config);
  ASSERT_FALSE(pvc.ok());
  EXPECT_NE(pvc.status().message().find(
                "spec.pytorchReplicaSpecs[Master].template.spec.volumes[0].persistentVolumeClaim:"),
            std::string::npos)
      << pvc.status().message();
  EXPECT_NE(pvc.status().message().find("--volume data=FOLDER"), std::string::npos);

  auto no_config =
      PlanMounts(WithPod(kMounts, Volumes("emptyDir: {}")), "Master", 0, "/s", LocalConfig());
  ASSERT_FALSE(no_config.ok());
  EXPECT_NE(no_config.status().message().find(
                "volumes[1].configMap.name: \"app-config\": not on this machine; give it with "
                "--configmap app-config=FOLDER"),
            std::string::npos)
      << no_config.status().message();

  auto unknown = PlanMounts(
      WithPod("            volumeMounts: [{name: nope, mountPath: /x}]\n", Volumes("emptyDir: {}")),
      "Master", 0, "/s", config);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("containers[0].volumeMounts[0].name: Not found"),
            std::string::npos);

  auto outside =
      PlanMounts(WithPod("            volumeMounts: [{name: ../../x, mountPath: /x}]\n",
                         "          volumes:\n          - {name: ../../x, emptyDir: {}}\n"),
                 "Master", 0, "/s", config);
  ASSERT_FALSE(outside.ok()) << "a volume name is a folder name: it must not leave the job's";
  EXPECT_NE(outside.status().message().find("volumes[0].name: Invalid value: \"../../x\""),
            std::string::npos)
      << outside.status().message();

  auto escape = PlanMounts(
      WithPod("            volumeMounts: [{name: data, mountPath: /x, subPath: ../../etc}]\n",
              Volumes("emptyDir: {}")),
      "Master", 0, "/s", config);
  ASSERT_FALSE(escape.ok());
  EXPECT_NE(escape.status().message().find("subPath"), std::string::npos);
}

TEST(PlanMounts, AClaimIsAFolderUnderTheStateRootSharedByEveryReplicaAndKept) {
  LocalConfig config;
  config.config_maps["app-config"] = {{"a.yaml", ""}};
  config.claims_dir = ClaimFolder("/state", "team-a", "");
  config.claims_dir.pop_back();
  api::Job job = WithPod(kMounts, Volumes("persistentVolumeClaim: {claimName: ft-run.1}"));
  auto master = PlanMounts(job, "Master", 0, "/state/job", config);
  ASSERT_TRUE(master.ok()) << master.status().message();
  auto data = std::find_if(master->begin(), master->end(),
                           [](const LocalMount& m) { return m.volume == "data"; });
  ASSERT_NE(data, master->end());
  EXPECT_EQ(data->kind, LocalMount::Kind::kClaim);
  EXPECT_EQ(data->local_path, "/state/.claims/team-a/ft-run.1");
  EXPECT_EQ(RewritePaths("--model_dir /data/model {\"output_dir\": \"/data/out\"}", *master),
            "--model_dir /state/.claims/team-a/ft-run.1/model "
            "{\"output_dir\": \"/state/.claims/team-a/ft-run.1/out\"}");

  auto bad = PlanMounts(WithPod(kMounts, Volumes("persistentVolumeClaim: {claimName: ../x}")),
                        "Master", 0, "/state/job", config);
  ASSERT_FALSE(bad.ok()) << "a claim name is a folder name: it must not leave the claims folder";
  EXPECT_NE(bad.status().message().find(
                "volumes[0].persistentVolumeClaim.claimName: Invalid value: \"../x\""),
            std::string::npos)
      << bad.status().message();

  fs::path root = fs::temp_directory_path() / ("claims-" + std::to_string(getpid()));
  config.claims_dir = (root / "ns").string();
  auto made = PlanMounts(job, "Master", 0, (root / "job").string(), config);
  ASSERT_TRUE(made.ok());
  ASSERT_TRUE(MakeMounts(*made).ok());
  EXPECT_TRUE(fs::is_directory(root / "ns" / "ft-run.1"));
  { std::ofstream((root / "ns" / "ft-run.1" / "kept")) << "x"; }
  ASSERT_TRUE(MakeMounts(*made).ok());
  EXPECT_TRUE(fs::exists(root / "ns" / "ft-run.1" / "kept")) << "a second run keeps the content";
  fs::remove_all(root);
}

TEST(RewritePaths, MountPathsBecomeLocalFoldersOnlyAsWholePathsOrPrefixes) {
  std::vector<LocalMount> mounts(2);
  mounts[0].mount_path = "/data/cache";
  mounts[0].local_path = "/tmp/c";
  mounts[1].mount_path = "/data";
  mounts[1].local_path = "/home/me/data";
  EXPECT_EQ(RewritePaths("--data=/data/train", mounts), "--data=/home/me/data/train");
  EXPECT_EQ(RewritePaths("/data", mounts), "/home/me/data");
  EXPECT_EQ(RewritePaths("/database", mounts), "/database");
  EXPECT_EQ(RewritePaths("/data/cache/x:/data", mounts), "/tmp/c/x:/home/me/data");
  EXPECT_EQ(RewritePaths("my/data", mounts), "my/data");
  EXPECT_EQ(RewritePaths("echo x >/data/out; cd /data\n/data/run.sh|(ls /data)", mounts),
            "echo x >/home/me/data/out; cd /home/me/data\n/home/me/data/run.sh|(ls "
            "/home/me/data)")
      << "shell redirections, lines and pipes are boundaries too";
}

TEST(PrepareLaunch, ConfigMapsSecretsAndEnvFilesFillTheEnvAndMountsRewriteArgs) {
  LocalConfig config;
  config.config_maps["app-config"] = {{"LR", "0.1"}, {"a.yaml", "x"}};
  config.secrets["creds"] = {{"token", "s3cret"}};
  config.env_files = {{"FROM_FILE", "0"}, {"OVERRIDDEN", "file"}, {"FROM_FILE", "1"}};
  api::Job job = WithPod(std::string(kMounts) + R"(            env:
            - {name: OVERRIDDEN, value: template}
            - name: TOKEN
              valueFrom: {secretKeyRef: {name: creds, key: token}}
            - name: MAYBE
              valueFrom: {configMapKeyRef: {name: absent, key: k, optional: true}}
            - {name: OUT, value: /scratch/out}
            envFrom:
            - {configMapRef: {name: app-config}, prefix: CFG_}
)",
                         Volumes("emptyDir: {}"));
  LaunchContext context;
  context.manifest_dir = "/";
  context.base_env = {"PATH=/usr/bin:/bin", "FROM_FILE=shell"};
  context.config = &config;
  context.mounts = *PlanMounts(job, "Master", 0, "/state/job", config);
  auto launch = PrepareLaunch(job, "Master", 0, {}, context);
  ASSERT_TRUE(launch.ok()) << launch.status().message();
  auto env = [&](const std::string& name) {
    for (const std::string& e : launch->spec.env)
      if (e.rfind(name + "=", 0) == 0) return e.substr(name.size() + 1);
    return std::string("<unset>");
  };
  EXPECT_EQ(env("CFG_LR"), "0.1");
  EXPECT_EQ(env("TOKEN"), "s3cret");
  EXPECT_EQ(env("MAYBE"), "<unset>") << "an optional reference that is absent is not set";
  EXPECT_EQ(env("FROM_FILE"), "1") << "an env file comes after the shell's env; later wins";
  EXPECT_EQ(env("OVERRIDDEN"), "template") << "and before the template's";
  EXPECT_EQ(env("OUT"), "/state/job/volumes/vol-master-0/scratch/run1/out");
  EXPECT_EQ(launch->spec.argv[1], "--data=/state/job/volumes/vol-master-0/data/train");
  EXPECT_EQ(launch->spec.argv[2], "/database");

  config.secrets.clear();
  auto missing = PrepareLaunch(job, "Master", 0, {}, context);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(
                "containers[0].env[1].valueFrom.secretKeyRef.name: \"creds\": not on this "
                "machine; give it with --secret creds=FOLDER"),
            std::string::npos)
      << missing.status().message();
}

TEST(PrepareLaunch, HostileEnvFromAndOptionalFieldsAreErrorsNotCrashes) {
  LaunchContext context;
  context.manifest_dir = "/";
  context.base_env = {"PATH=/usr/bin:/bin"};
  for (const char* extra : {"            envFrom: [\"x\", 3]\n",
                            "            envFrom: [{configMapRef: {name: c, optional: \"yes\"}}]\n",
                            "            env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: "
                            "1, optional: 2}}}]\n"}) {
    api::Job job = LoadJob(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: h}\nspec:\n"
        "  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n      template:\n        spec:\n"
        "          containers:\n          - name: pytorch\n            image: t\n"
        "            command: [\"true\"]\n" +
        std::string(extra));
    auto launch = PrepareLaunch(job, "Master", 0, {}, context);
    ASSERT_FALSE(launch.ok()) << extra;
    EXPECT_EQ(launch.status().code(), StatusCode::kInvalid);
    EXPECT_NE(launch.status().message().find("containers[0].env"), std::string::npos)
        << launch.status().message();
  }
}

TEST(PrepareLaunch, AProgramInAConfigMapVolumeRunsWithItsModeAndOnlyTemplatePathsAreRewritten) {
  std::string root = fs::temp_directory_path() / ("trainctl-exe-" + std::to_string(getpid()));
  fs::remove_all(root);
  LocalConfig config;
  config.config_maps["scripts"] = {{"run.sh", "#!/bin/sh\nexit 0\n"}};
  api::Job job = LoadJob(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: exe}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          volumes:
          - {name: scripts, configMap: {name: scripts, defaultMode: 493}}
          - {name: work, emptyDir: {}}
          containers:
          - name: pytorch
            image: t
            workingDir: /work/out
            command: [/scripts/run.sh]
            env: [{name: MINE, value: /work/x}]
            volumeMounts:
            - {name: scripts, mountPath: /scripts}
            - {name: work, mountPath: /work}
)");
  LaunchContext context;
  context.manifest_dir = "/";
  context.base_env = {"PATH=/usr/bin:/bin"};
  context.config = &config;
  context.mounts = *PlanMounts(job, "Master", 0, root, config);
  api::ReplicaEnv injected;
  injected.env.push_back({"FRAMEWORK_PATH", "/work/framework", nullptr});
  auto launch = ResolveLaunch(job, "Master", 0, injected, context);
  ASSERT_TRUE(launch.ok()) << "the script is written when the replica starts, so it is not "
                              "looked up before: "
                           << launch.status().message();
  EXPECT_EQ(launch->spec.argv[0], root + "/volumes/exe-master-0/scripts/run.sh");
  auto has = [&](const std::string& entry) {
    return std::find(launch->spec.env.begin(), launch->spec.env.end(), entry) !=
           launch->spec.env.end();
  };
  EXPECT_TRUE(has("MINE=" + root + "/volumes/exe-master-0/work/x"));
  EXPECT_TRUE(has("FRAMEWORK_PATH=/work/framework")) << "trainctl's own values stay as they are";
  ASSERT_TRUE(MakeMounts(launch->mounts, launch->spec.cwd).ok());
  EXPECT_TRUE(fs::is_directory(root + "/volumes/exe-master-0/work/out"))
      << "a workingDir inside a volume is made with it";
  struct stat st;
  ASSERT_EQ(stat(launch->spec.argv[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u) << "defaultMode 0755 makes the script executable";
  fs::remove_all(root);
}

TEST(MakeMounts, WritesConfigFilesAndKeepsSecretsPrivate) {
  std::string root = fs::temp_directory_path() / ("trainctl-mounts-" + std::to_string(getpid()));
  fs::remove_all(root);
  LocalConfig config;
  config.config_maps["app-config"] = {{"a.yaml", "x: 1\n"}};
  config.secrets["creds"] = {{"token", "s3cret"}};
  api::Job job = WithPod(R"(            volumeMounts:
            - {name: cfg, mountPath: /etc/app}
            - {name: sec, mountPath: /etc/sec}
            - {name: scratch, mountPath: /scratch}
)",
                         "          volumes:\n"
                         "          - {name: cfg, configMap: {name: app-config}}\n"
                         "          - {name: sec, secret: {secretName: creds}}\n"
                         "          - {name: scratch, emptyDir: {}}\n");
  auto mounts = PlanMounts(job, "Master", 0, root, config);
  ASSERT_TRUE(mounts.ok()) << mounts.status().message();
  ASSERT_TRUE(MakeMounts(*mounts).ok());
  std::ifstream a(root + "/volumes/vol-master-0/cfg/a.yaml");
  std::string content((std::istreambuf_iterator<char>(a)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "x: 1\n");
  struct stat st;
  ASSERT_EQ(stat((root + "/volumes/vol-master-0/sec/token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(fs::is_directory(root + "/volumes/vol-master-0/scratch"));
  std::ofstream(root + "/volumes/vol-master-0/scratch/kept") << "1";
  ASSERT_TRUE(MakeMounts(*mounts).ok());
  EXPECT_TRUE(fs::exists(root + "/volumes/vol-master-0/scratch/kept"))
      << "an emptyDir outlives a restart in place";
  fs::remove_all(root);
}

}  // namespace
}  // namespace trainctl::local
