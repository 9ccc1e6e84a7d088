#!/usr/bin/python3
"""Renders every Kubernetes overlay of deploy/k8s offline with
`kubectl kustomize` (and the cpu overlay with the tls component) and checks
the objects: the kinds; the coordinator a StatefulSet with its state on a
PersistentVolumeClaim, a Service, gRPC readiness and liveness probes;
workers with a liveness probe, resource requests, their pod IP as their
address and, on the gpu overlay, one nvidia.com/gpu each and a memory-backed
/dev/shm; tokens and TLS material only as references to Secrets (no Secret
object and no token value in the output). Not a cluster run: none can run
here. Exits 77 (skipped) without kubectl.

Usage: k8s_render_test.py REPO_DIR"""
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

SKIP = 77


def render(path):
    out = subprocess.run(["kubectl", "kustomize", path], check=True,
                         capture_output=True, text=True).stdout
    return out, [d for d in yaml.safe_load_all(out) if d]


def by_kind(objects, kind, name):
    found = [o for o in objects
             if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def secret_names(pod_spec):
    return {v["secret"]["secretName"] for v in pod_spec.get("volumes", [])
            if "secret" in v}


def check_common(text, objects):
    kinds = sorted((o["kind"], o["metadata"]["name"]) for o in objects)
    assert kinds == [("Deployment", "gradsync-worker"),
                     ("NetworkPolicy", "gradsync-coordinator"),
                     ("NetworkPolicy", "gradsync-worker"),
                     ("PersistentVolumeClaim", "gradsync-data"),
                     ("Service", "gradsync-coordinator"),
                     ("StatefulSet", "gradsync-coordinator")], kinds
    assert not any(o["kind"] == "Secret" for o in objects), "Secret inlined"
    for o in objects:
        assert o["metadata"]["labels"]["app.kubernetes.io/part-of"] == \
            "gradsync", o["metadata"]

    coord = by_kind(objects, "StatefulSet", "gradsync-coordinator")
    assert coord["spec"]["replicas"] == 1
    pod = coord["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["command"] == ["gradsync-coordinator"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert c[probe]["grpc"]["port"] == 50051, (probe, c[probe])
    env = env_of(c)
    # Tokens from files of the Secret, never as values.
    assert env["GRADSYNC_TOKEN_FILE"]["value"].startswith("/etc/gradsync/")
    assert "GRADSYNC_TOKEN" not in env and "GRADSYNC_WORKER_TOKEN" not in env
    assert "gradsync-tokens" in secret_names(pod)
    claims = [t["metadata"]["name"]
              for t in coord["spec"]["volumeClaimTemplates"]]
    assert claims == ["state"], claims
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert mounts["state"] == env["GRADSYNC_STATE_DIR"]["value"], mounts
    assert pod["securityContext"]["runAsNonRoot"] is True

    service = by_kind(objects, "Service", "gradsync-coordinator")
    assert service["spec"]["selector"] == \
        coord["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["ports"][0]["port"] == 50051
    # The monitoring port, served and exposed under one name.
    assert env["GRADSYNC_HTTP_LISTEN"]["value"] == "0.0.0.0:9464", env
    assert {"name": "metrics", "containerPort": 9464} in c["ports"], c["ports"]
    assert {"name": "metrics", "port": 9464, "targetPort": "metrics"} in \
        service["spec"]["ports"], service["spec"]["ports"]

    # The read-only metrics token, from the Secret too.
    assert env["GRADSYNC_METRICS_TOKEN_FILE"]["value"].startswith(
        "/etc/gradsync/"), env
    # Network policies: gRPC from workers and labelled clients, the
    # monitoring port from labelled scrapers only, workers from workers.
    policy = by_kind(objects, "NetworkPolicy", "gradsync-coordinator")
    assert policy["spec"]["podSelector"]["matchLabels"] == \
        coord["spec"]["template"]["metadata"]["labels"]
    rules = {r["ports"][0]["port"]: r["from"]
             for r in policy["spec"]["ingress"]}
    assert set(rules) == {50051, 9464}, rules
    assert rules[9464] == [{"namespaceSelector": {}, "podSelector": {
        "matchLabels": {"gradsync.io/scraper": "true"}}}], rules[9464]
    assert {"podSelector": {"matchLabels": {
        "app.kubernetes.io/name": "gradsync-worker"}}} in rules[50051]
    wpolicy = by_kind(objects, "NetworkPolicy", "gradsync-worker")
    assert wpolicy["spec"]["ingress"] == [{"from": [{"podSelector": {
        "matchLabels": {"app.kubernetes.io/name": "gradsync-worker"}}}]}], \
        wpolicy["spec"]

    worker = by_kind(objects, "Deployment", "gradsync-worker")
    wpod = worker["spec"]["template"]["spec"]
    (w,) = wpod["containers"]
    wenv = env_of(w)
    assert wenv["GRADSYNC_COORDINATOR"]["value"] == "gradsync-coordinator:50051"
    assert wenv["GRADSYNC_WORKER_HOST"]["valueFrom"]["fieldRef"][
        "fieldPath"] == "status.podIP"
    assert "GRADSYNC_WORKER_TOKEN" not in wenv
    assert "gradsync-tokens" in secret_names(wpod)
    assert w["livenessProbe"]["exec"]["command"][:2] == [
        "gradsync-worker", "--check-health"]
    assert "GRADSYNC_WORKER_HEALTH_FILE" in wenv
    assert w["resources"]["requests"]["cpu"], w["resources"]
    return coord, worker


def main():
    if shutil.which("kubectl") is None:
        print("k8s_render_test: SKIPPED: kubectl not found")
        return SKIP
    repo = os.path.abspath(sys.argv[1])
    k8s = os.path.join(repo, "deploy", "k8s")

    text, objects = render(os.path.join(k8s, "overlays", "cpu"))
    coord, worker = check_common(text, objects)
    w = worker["spec"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in str(w["resources"]), w["resources"]
    assert w["image"] == "gradsync:latest"

    text, objects = render(os.path.join(k8s, "overlays", "gpu"))
    coord, worker = check_common(text, objects)
    wpod = worker["spec"]["template"]["spec"]
    w = wpod["containers"][0]
    assert w["resources"]["limits"]["nvidia.com/gpu"] == 1, w["resources"]
    assert w["image"].startswith("gradsync-cuda"), w["image"]
    shm = [v for v in wpod["volumes"] if v["name"] == "dshm"]
    assert shm and shm[0]["emptyDir"]["medium"] == "Memory", wpod["volumes"]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in w["volumeMounts"]

    # The cpu overlay with the tls component, as a user's overlay adds it.
    with tempfile.TemporaryDirectory(dir=k8s) as tmp:
        with open(os.path.join(tmp, "kustomization.yaml"), "w") as f:
            f.write("apiVersion: kustomize.config.k8s.io/v1beta1\n"
                    "kind: Kustomization\n"
                    "resources: [../overlays/cpu]\n"
                    "components: [../components/tls]\n")
        text, objects = render(tmp)
    coord, worker = check_common(text, objects)
    cpod = coord["spec"]["template"]["spec"]
    cenv = env_of(cpod["containers"][0])
    assert cenv["GRADSYNC_REQUIRE_WORKER_CERT"]["value"] == "true"
    assert "gradsync-tls-server" in secret_names(cpod)
    # (The monitoring port follows GRADSYNC_TLS_CERT: HTTPS.)
    assert cenv["GRADSYNC_TLS_CERT"]["value"].startswith("/etc/gradsync/")
    wpod = worker["spec"]["template"]["spec"]
    assert "GRADSYNC_TLS_CLIENT_CERT" in env_of(wpod["containers"][0])
    assert "gradsync-tls-worker" in secret_names(wpod)
    assert "BEGIN" not in text, "certificate material inlined"
    print("k8s_render_test: PASSED: overlays cpu, gpu and cpu+tls render "
          "and hold the expected objects")
    return 0


if __name__ == "__main__":
    sys.exit(main())
