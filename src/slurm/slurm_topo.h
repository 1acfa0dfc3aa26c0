/*
 * Slurm's tree topology (topology.conf with TopologyPlugin=topology/tree): under which leaf
 * switch each node of the job is, for the path class of a pair of nodes (src/screen/path.h).
 *
 * Read through libslurm's slurm_load_topo(), the RPC `scontrol show topology` makes: the
 * switches' records, each with the host list of the nodes directly under it, expanded with
 * slurm_hostlist_find().  No scontrol is run and no text parsed (scontrol is not in every
 * compute node's PATH, its output is for people); libslurm is what collprof links for its
 * job facts already (src/slurm/slurm_meta.h), under the same conditions: only inside a job
 * (SLURM_JOB_ID), with a configuration file, and not with COLLPROF_SLURM_LOOKUP=0.  Built
 * without libslurm, or with a Slurm whose slurm_load_topo is not 22.05's, there is no
 * topology and every pair is "any".
 */
#ifndef COLLPROF_SLURM_TOPO_H
#define COLLPROF_SLURM_TOPO_H

#include <stddef.h>

/**
 * The leaf switch of each of hosts[0 .. n-1] (a node's host name, or its name before the
 * first '.', as Slurm's NodeName) into leaf[]: the same index for hosts under one leaf switch
 * (a switch with nodes of its own), -1 for a host in none.  Returns the leaf switches that
 * hold one of the hosts (1 or more), or 0 when there is no topology, with why ("" when
 * found).  Rank 0 calls it once per run; it blocks for one RPC to slurmctld (a few ms).
 */
int cp_slurm_topo_leaves(const char *const *hosts, int n, int *leaf, char *why, size_t len);

#endif
