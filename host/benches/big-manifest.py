#!/usr/bin/env python3
"""Writes a manifest of NODES nodes (64 cpu, 256Gi, 250 pods) and PODS plain pods
(100m, 128Mi; each a job of its own, in 20 namespaces) to stdout, for timing
`tephra simulate` on a large input (docs/PERFORMANCE.md).

    host/benches/big-manifest.py 1000 50000 > big.yaml
"""
import sys

nodes, pods = int(sys.argv[1]), int(sys.argv[2])
docs = [
    "apiVersion: v1\nkind: Node\nmetadata: {name: n%d}\n"
    'status: {allocatable: {cpu: "64", memory: 256Gi, pods: "250"}}\n' % i
    for i in range(nodes)
]
docs += [
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p%d, namespace: ns%d}\n"
    "spec: {schedulerName: volcano, containers: [{name: c, image: x, "
    "resources: {requests: {cpu: 100m, memory: 128Mi}}}]}\n" % (i, i % 20)
    for i in range(pods)
]
sys.stdout.write("---\n".join(docs))
