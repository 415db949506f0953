"""Stand-ins for the ``kubernetes.client`` models the SDK uses, for when that package is absent
(or ``TRAINCTL_SDK_NO_KUBERNETES=1``): same class names, attribute names, type strings, JSON keys
and required attributes, built on our ``Model`` base, so ``to_dict``/``serialize``/
``deserialize`` behave alike.

Which classes: the pod-template chain a job is made of (V1PodTemplateSpec, V1PodSpec, V1Container,
env, ports, resources, volumes, mounts and the sources they name), what reading pods, events and
PVCs gives (V1Pod, V1PodList, V1PodStatus, V1PodCondition, V1ContainerStatus, V1ContainerState*,
CoreV1Event, CoreV1EventList, V1PersistentVolumeClaim*), metadata (V1ObjectMeta, V1ListMeta,
V1OwnerReference, V1LabelSelector*) and V1DeleteOptions. See ``STANDIN_SPECS`` for the list.

Which fields: every field of each class as in ``kubernetes`` 35.0.0 (a newer client than
Debian's 22.6, whose classes lack a few of them and have ``V1ObjectMeta.cluster_name``). A field
whose type is a kubernetes model not in this list (V1Affinity, V1Probe, V1SecurityContext, ...)
keeps that type string but holds plain JSON (a dict in camelCase) when deserialized here.

Spec syntax, one token per field: ``attr[!][=jsonKey]:type``; ``!`` marks a required field,
``=jsonKey`` is given only where the key is not the plain camelCase of the attribute, and types
are written without spaces (``dict(str,str)``; read back as ``dict(str, str)``).
"""

import re

from .base import Model

STANDIN_SPECS = {
    "V1ObjectMeta": """
    annotations:dict(str,str) creation_timestamp:datetime deletion_grace_period_seconds:int
    deletion_timestamp:datetime finalizers:list[str] generate_name:str generation:int
    labels:dict(str,str) managed_fields:list[V1ManagedFieldsEntry] name:str namespace:str
    owner_references:list[V1OwnerReference] resource_version:str self_link:str uid:str""",
    "V1ListMeta": """
    _continue:str remaining_item_count:int resource_version:str self_link:str""",
    "V1OwnerReference": """
    api_version!:str block_owner_deletion:bool controller:bool kind!:str name!:str uid!:str""",
    "V1LabelSelector": """
    match_expressions:list[V1LabelSelectorRequirement] match_labels:dict(str,str)""",
    "V1LabelSelectorRequirement": """
    key!:str operator!:str values:list[str]""",
    "V1PodTemplateSpec": """
    metadata:V1ObjectMeta spec:V1PodSpec""",
    "V1PodSpec": """
    active_deadline_seconds:int affinity:V1Affinity automount_service_account_token:bool
    containers!:list[V1Container] dns_config:V1PodDNSConfig dns_policy:str
    enable_service_links:bool ephemeral_containers:list[V1EphemeralContainer]
    host_aliases:list[V1HostAlias] host_ipc=hostIPC:bool host_network:bool
    host_pid=hostPID:bool host_users:bool hostname:str hostname_override:str
    image_pull_secrets:list[V1LocalObjectReference] init_containers:list[V1Container]
    node_name:str node_selector:dict(str,str) os:V1PodOS overhead:dict(str,str)
    preemption_policy:str priority:int priority_class_name:str
    readiness_gates:list[V1PodReadinessGate] resource_claims:list[V1PodResourceClaim]
    resources:V1ResourceRequirements restart_policy:str runtime_class_name:str
    scheduler_name:str scheduling_gates:list[V1PodSchedulingGate]
    security_context:V1PodSecurityContext service_account:str service_account_name:str
    set_hostname_as_fqdn=setHostnameAsFQDN:bool share_process_namespace:bool subdomain:str
    termination_grace_period_seconds:int tolerations:list[V1Toleration]
    topology_spread_constraints:list[V1TopologySpreadConstraint] volumes:list[V1Volume]
    workload_ref:V1WorkloadReference""",
    "V1Container": """
    args:list[str] command:list[str] env:list[V1EnvVar] env_from:list[V1EnvFromSource]
    image:str image_pull_policy:str lifecycle:V1Lifecycle liveness_probe:V1Probe name!:str
    ports:list[V1ContainerPort] readiness_probe:V1Probe
    resize_policy:list[V1ContainerResizePolicy] resources:V1ResourceRequirements
    restart_policy:str restart_policy_rules:list[V1ContainerRestartRule]
    security_context:V1SecurityContext startup_probe:V1Probe stdin:bool stdin_once:bool
    termination_message_path:str termination_message_policy:str tty:bool
    volume_devices:list[V1VolumeDevice] volume_mounts:list[V1VolumeMount] working_dir:str""",
    "V1ContainerPort": """
    container_port!:int host_ip=hostIP:str host_port:int name:str protocol:str""",
    "V1EnvVar": """
    name!:str value:str value_from:V1EnvVarSource""",
    "V1EnvVarSource": """
    config_map_key_ref:V1ConfigMapKeySelector field_ref:V1ObjectFieldSelector
    file_key_ref:V1FileKeySelector resource_field_ref:V1ResourceFieldSelector
    secret_key_ref:V1SecretKeySelector""",
    "V1EnvFromSource": """
    config_map_ref:V1ConfigMapEnvSource prefix:str secret_ref:V1SecretEnvSource""",
    "V1ConfigMapKeySelector": """
    key!:str name:str optional:bool""",
    "V1SecretKeySelector": """
    key!:str name:str optional:bool""",
    "V1ObjectFieldSelector": """
    api_version:str field_path!:str""",
    "V1ResourceFieldSelector": """
    container_name:str divisor:str resource!:str""",
    "V1ConfigMapEnvSource": """
    name:str optional:bool""",
    "V1SecretEnvSource": """
    name:str optional:bool""",
    "V1ResourceRequirements": """
    claims:list[CoreV1ResourceClaim] limits:dict(str,str) requests:dict(str,str)""",
    "V1VolumeResourceRequirements": """
    limits:dict(str,str) requests:dict(str,str)""",
    "V1Volume": """
    aws_elastic_block_store:V1AWSElasticBlockStoreVolumeSource
    azure_disk:V1AzureDiskVolumeSource azure_file:V1AzureFileVolumeSource
    cephfs:V1CephFSVolumeSource cinder:V1CinderVolumeSource
    config_map:V1ConfigMapVolumeSource csi:V1CSIVolumeSource
    downward_api=downwardAPI:V1DownwardAPIVolumeSource empty_dir:V1EmptyDirVolumeSource
    ephemeral:V1EphemeralVolumeSource fc:V1FCVolumeSource flex_volume:V1FlexVolumeSource
    flocker:V1FlockerVolumeSource gce_persistent_disk:V1GCEPersistentDiskVolumeSource
    git_repo:V1GitRepoVolumeSource glusterfs:V1GlusterfsVolumeSource
    host_path:V1HostPathVolumeSource image:V1ImageVolumeSource iscsi:V1ISCSIVolumeSource
    name!:str nfs:V1NFSVolumeSource
    persistent_volume_claim:V1PersistentVolumeClaimVolumeSource
    photon_persistent_disk:V1PhotonPersistentDiskVolumeSource
    portworx_volume:V1PortworxVolumeSource projected:V1ProjectedVolumeSource
    quobyte:V1QuobyteVolumeSource rbd:V1RBDVolumeSource
    scale_io=scaleIO:V1ScaleIOVolumeSource secret:V1SecretVolumeSource
    storageos:V1StorageOSVolumeSource vsphere_volume:V1VsphereVirtualDiskVolumeSource""",
    "V1VolumeMount": """
    mount_path!:str mount_propagation:str name!:str read_only:bool recursive_read_only:str
    sub_path:str sub_path_expr:str""",
    "V1EmptyDirVolumeSource": """
    medium:str size_limit:str""",
    "V1HostPathVolumeSource": """
    path!:str type:str""",
    "V1ConfigMapVolumeSource": """
    default_mode:int items:list[V1KeyToPath] name:str optional:bool""",
    "V1SecretVolumeSource": """
    default_mode:int items:list[V1KeyToPath] optional:bool secret_name:str""",
    "V1KeyToPath": """
    key!:str mode:int path!:str""",
    "V1PersistentVolumeClaimVolumeSource": """
    claim_name!:str read_only:bool""",
    "V1Toleration": """
    effect:str key:str operator:str toleration_seconds:int value:str""",
    "V1LocalObjectReference": """
    name:str""",
    "V1Pod": """
    api_version:str kind:str metadata:V1ObjectMeta spec:V1PodSpec status:V1PodStatus""",
    "V1PodList": """
    api_version:str items!:list[V1Pod] kind:str metadata:V1ListMeta""",
    "V1PodStatus": """
    allocated_resources:dict(str,str) conditions:list[V1PodCondition]
    container_statuses:list[V1ContainerStatus]
    ephemeral_container_statuses:list[V1ContainerStatus]
    extended_resource_claim_status:V1PodExtendedResourceClaimStatus host_ip=hostIP:str
    host_i_ps:list[V1HostIP] init_container_statuses:list[V1ContainerStatus] message:str
    nominated_node_name:str observed_generation:int phase:str pod_ip=podIP:str
    pod_i_ps:list[V1PodIP] qos_class:str reason:str resize:str
    resource_claim_statuses:list[V1PodResourceClaimStatus] resources:V1ResourceRequirements
    start_time:datetime""",
    "V1PodCondition": """
    last_probe_time:datetime last_transition_time:datetime message:str
    observed_generation:int reason:str status!:str type!:str""",
    "V1ContainerStatus": """
    allocated_resources:dict(str,str) allocated_resources_status:list[V1ResourceStatus]
    container_id=containerID:str image!:str image_id!=imageID:str
    last_state:V1ContainerState name!:str ready!:bool resources:V1ResourceRequirements
    restart_count!:int started:bool state:V1ContainerState stop_signal:str
    user:V1ContainerUser volume_mounts:list[V1VolumeMountStatus]""",
    "V1ContainerState": """
    running:V1ContainerStateRunning terminated:V1ContainerStateTerminated
    waiting:V1ContainerStateWaiting""",
    "V1ContainerStateTerminated": """
    container_id=containerID:str exit_code!:int finished_at:datetime message:str reason:str
    signal:int started_at:datetime""",
    "V1ContainerStateRunning": """
    started_at:datetime""",
    "V1ContainerStateWaiting": """
    message:str reason:str""",
    "V1DeleteOptions": """
    api_version:str dry_run:list[str] grace_period_seconds:int
    ignore_store_read_error_with_cluster_breaking_potential:bool kind:str
    orphan_dependents:bool preconditions:V1Preconditions propagation_policy:str""",
    "V1Preconditions": """
    resource_version:str uid:str""",
    "V1ObjectReference": """
    api_version:str field_path:str kind:str name:str namespace:str resource_version:str
    uid:str""",
    "CoreV1Event": """
    action:str api_version:str count:int event_time:datetime first_timestamp:datetime
    involved_object!:V1ObjectReference kind:str last_timestamp:datetime message:str
    metadata!:V1ObjectMeta reason:str related:V1ObjectReference reporting_component:str
    reporting_instance:str series:CoreV1EventSeries source:V1EventSource type:str""",
    "CoreV1EventList": """
    api_version:str items!:list[CoreV1Event] kind:str metadata:V1ListMeta""",
    "V1EventSource": """
    component:str host:str""",
    "V1PersistentVolumeClaim": """
    api_version:str kind:str metadata:V1ObjectMeta spec:V1PersistentVolumeClaimSpec
    status:V1PersistentVolumeClaimStatus""",
    "V1PersistentVolumeClaimSpec": """
    access_modes:list[str] data_source:V1TypedLocalObjectReference
    data_source_ref:V1TypedObjectReference resources:V1VolumeResourceRequirements
    selector:V1LabelSelector storage_class_name:str volume_attributes_class_name:str
    volume_mode:str volume_name:str""",
    "V1PersistentVolumeClaimStatus": """
    access_modes:list[str] allocated_resource_statuses:dict(str,str)
    allocated_resources:dict(str,str) capacity:dict(str,str)
    conditions:list[V1PersistentVolumeClaimCondition]
    current_volume_attributes_class_name:str modify_volume_status:V1ModifyVolumeStatus
    phase:str""",
    "V1PersistentVolumeClaimList": """
    api_version:str items!:list[V1PersistentVolumeClaim] kind:str metadata:V1ListMeta""",
}


def _camel(attr):
    head, *rest = attr.lstrip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _build(name, spec):
    types, keys, required = {}, {}, set()
    for token in spec.split():
        field, type_name = token.split(":", 1)
        field, _, key = field.partition("=")
        if field.endswith("!"):
            field = field[:-1]
            required.add(field)
        types[field] = re.sub(r",(?! )", ", ", type_name)
        keys[field] = key or _camel(field)
    return type(name, (Model,), {
        "__module__": __name__, "__qualname__": name,
        "__doc__": f"Stand-in for ``kubernetes.client.{name}`` (see the module docstring).",
        "openapi_types": types, "attribute_map": keys, "required_attributes": frozenset(required),
    })


STANDINS = {name: _build(name, spec) for name, spec in STANDIN_SPECS.items()}
globals().update(STANDINS)
