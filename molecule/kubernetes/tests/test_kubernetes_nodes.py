"""The kubernetes stage on a control-plane node and a worker (no live cluster: see molecule.yml): the
stand-in packages pinned and held, the repository, containerd for Kubernetes on the control plane, the
node's modules, sysctls and kubelet, what the stand-in kubeadm was asked to do, and on the control plane
the rendered kubeadm configuration (converge.yml's inputs), the kubeconfig and the manifests as Debian's
real kubectl reads them."""

from __future__ import annotations

import pytest
import yaml

PINNED = "1.33.5-1.1"  # the role's pinned default, which the scenario keeps; 1.33.6 is in the mirror too
REPO_URL = "http://127.0.0.1:8080/kubernetes/core:/stable:/v1.33/deb/"  # converge.yml's kubernetes_repo_url
CP = "kubernetes-cp"


@pytest.fixture
def control_plane(node):
    return node(CP)[0]


@pytest.mark.parametrize("package", ["kubeadm", "kubelet", "kubectl"])
def test_the_stand_ins_are_installed_at_the_pinned_version_and_held(host, package):
    status = host.check_output(f"dpkg-query --show --showformat '${{Version}} ${{binary:Summary}}' {package}")
    assert status.startswith(f"{PINNED} clusterforge test stand-in")
    assert package in host.check_output("apt-mark showhold").splitlines()


def test_the_pin_wins_over_the_newer_version(host):
    assert f"Candidate: {PINNED}" in host.check_output("apt-cache policy kubeadm")


def test_the_repository_is_signed_by_its_own_keyring(host):
    lines = host.file("/etc/apt/sources.list.d/kubernetes.sources").content_string.splitlines()
    assert f"URIs: {REPO_URL}" in lines
    assert "Signed-By: /etc/apt/keyrings/kubernetes.asc" in lines


def test_the_modules_sysctls_and_kubelet(host):
    modules = host.file("/etc/modules-load.d/kubernetes.conf").content_string.splitlines()
    assert {"br_netfilter", "overlay"} <= set(modules)
    sysctls = host.file("/etc/sysctl.d/60-kubernetes.conf").content_string.splitlines()
    assert "net.bridge.bridge-nf-call-iptables = 1" in sysctls
    assert "net.ipv4.ip_forward = 1" in sysctls
    assert host.service("kubelet").is_enabled


def test_containerd_runs_for_kubernetes_on_the_control_plane(control_plane, containerd_loaded_on):
    assert control_plane.service("containerd").is_running
    cri = containerd_loaded_on(control_plane)["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.10"


def test_the_worker_has_no_containerd_as_its_inputs_say(node):
    worker, inputs = node("kubernetes-worker")
    assert inputs["kubernetes_containerd"] is False
    assert not worker.service("containerd").is_running


def test_init_ran_once_on_the_control_plane_and_join_once_on_the_worker(host):
    calls = host.file("/var/lib/clusterforge-standin/calls").content_string.splitlines()
    kubeadm = [call for call in calls if call.startswith(("init ", "join "))]
    assert len(kubeadm) == 1
    assert kubeadm[0].startswith("init " if host.backend.name == CP else "join ")
    assert not host.file("/etc/kubernetes/clusterforge/kubeadm-join.yaml").exists
    assert host.file("/etc/kubernetes/clusterforge/kubeadm-config.yaml").mode == 0o600


def test_the_kubeadm_configuration_carries_the_inputs(control_plane):
    text = control_plane.file("/etc/kubernetes/clusterforge/kubeadm-config.yaml").content_string
    docs = [doc for doc in yaml.safe_load_all(text) if doc]
    assert [doc["kind"] for doc in docs] == ["InitConfiguration", "ClusterConfiguration", "KubeletConfiguration"]
    init, cluster, kubelet = docs
    assert cluster["controlPlaneEndpoint"] == "k8s-api.lab.clusterforge.test:6443"
    assert cluster["apiServer"]["certSANs"] == ["k8s-api.lab.clusterforge.test", "10.0.0.10"]
    assert cluster["networking"] == {
        "podSubnet": "10.244.0.0/16",
        "serviceSubnet": "10.96.0.0/12",
        "dnsDomain": "cluster.local",
    }
    assert cluster["kubernetesVersion"] == "v1.33.5"
    assert kubelet["cgroupDriver"] == "systemd"
    assert init["nodeRegistration"]["kubeletExtraArgs"] == [
        {"name": "node-labels", "value": "clusterforge.io/scenario=kubernetes"}
    ]
    assert init["nodeRegistration"]["taints"][0]["key"] == "node-role.kubernetes.io/control-plane"


def test_the_kubeconfig_is_the_user_s_mode_0600(control_plane):
    kubeconfig = control_plane.file("/home/kubeadmin/.kube/config")
    assert kubeconfig.exists
    assert kubeconfig.user == "kubeadmin"
    assert kubeconfig.mode == 0o600


# Real kubectl (Debian 13's, unpacked aside by prepare): kustomize parses every manifest offline.
def test_debian_s_kubectl_reads_every_object_of_both_manifests(control_plane):
    kinds = control_plane.check_output(
        "rm -rf /tmp/verify-kustomize && mkdir /tmp/verify-kustomize"
        " && cp /etc/kubernetes/clusterforge/*.yml /tmp/verify-kustomize/"
        " && printf 'resources:\\n- kube-flannel.yml\\n- nvidia-device-plugin.yml\\n'"
        " >/tmp/verify-kustomize/kustomization.yaml"
        " && /opt/debian-kubectl/usr/bin/kubectl kustomize /tmp/verify-kustomize | grep -E '^kind: ' | sort | uniq -c"
    )
    assert [line.strip() for line in kinds.splitlines()] == [
        "1 kind: ClusterRole",
        "1 kind: ClusterRoleBinding",
        "2 kind: ConfigMap",
        "3 kind: DaemonSet",
        "1 kind: Namespace",
        "1 kind: ServiceAccount",
    ]


def test_the_device_plugin_configuration_carries_the_time_slicing_replicas(control_plane):
    plugin = control_plane.check_output("grep -A3 'timeSlicing:' /etc/kubernetes/clusterforge/nvidia-device-plugin.yml")
    assert "replicas: 4" in plugin
