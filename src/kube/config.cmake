# Client configuration: kubeconfig files, in-cluster service account, exec credential plugins.
