/* The network suites' shared ground: scenarios from text, transfers as
 * jobs run to their end (network_jobs.c). */
#pragma once

#include "network/network.h"
#include "topology/scenario.h"

#include <check.h>

#define SCENARIOS WEFT_SOURCE_DIR "/scenarios"

/* One transfer of a test, and when it ended. */
typedef struct {
  uint32_t src, dst;
  uint64_t bytes;
  double cap;                   /* B/s, 0: none */
  WeftTime done;                /* filled in */
} Job;

/* A job to start later, on a network. */
typedef struct {
  WeftNetwork *net;
  Job *job;
} Start;

/* Star topologies: the link type l (100 Gb/s, 50 ns), GPUs h of 4 ports
 * and switches s of 64, for a star fabric or links of the test's own. */
#define STAR                                                                  \
  "weft: 1\n"                                                                 \
  "link_types:\n"                                                             \
  "  l: {port: p, bandwidth: 100Gb/s, payload: 4096B, latency: 50ns}\n"       \
  "devices:\n"                                                                \
  "  h: {kind: gpu, ports: {p: 4}, reduce_bandwidth: 1TB/s}\n"                \
  "  s: {kind: switch, ports: {p: 64}, latency: 100ns}\n"

/* h0 and h1, each linked to two switches: two equal-cost ways from one to
 * the other, through sw1 ten times slower than through sw0. */
#define TWO_WAYS                                                              \
  "weft: 1\n"                                                                 \
  "link_types:\n"                                                             \
  "  fast: {port: p, bandwidth: 100GB/s, payload: 4096B}\n"                   \
  "  slow: {port: p, bandwidth: 10GB/s, payload: 4096B}\n"                    \
  "devices:\n"                                                                \
  "  h: {kind: gpu, ports: {p: 2}, reduce_bandwidth: 1TB/s}\n"                \
  "  s: {kind: switch, ports: {p: 2}}\n"                                      \
  "nodes: [{name: 'h[0-1]', device: h}, {name: 'sw[0-1]', device: s}]\n"     \
  "links:\n"                                                                  \
  "  - {a: 'h[0-1]', b: sw0, type: fast}\n"                                   \
  "  - {a: 'h[0-1]', b: sw1, type: slow}\n"

/* The link type l, a GPU h with one port, and a switch s of a number of
 * ports (a %d for g_strdup_printf()). */
#define HOSTS_TYPES                                                          \
  "weft: 1\n"                                                                \
  "link_types:\n"                                                            \
  "  l: {port: p, bandwidth: 100Gb/s, payload: 4096B, latency: 50ns}\n"      \
  "devices:\n"                                                               \
  "  h: {kind: gpu, ports: {p: 1}, reduce_bandwidth: 1TB/s}\n"               \
  "  s: {kind: switch, ports: {p: %d}, latency: 100ns}\n"

/* The scenario of YAML @text, which must load. */
WeftScenario *load_text (const char *text);

/* The id of node @name of @topo, which must exist. */
uint32_t node (const WeftTopology *topo, const char *name);

/* A transfer's done function: sets the job (@target)'s done to now. */
void job_done (WeftSim *sim, void *target, void *data);

/* Run @n @jobs (all starting at 0) with @fidelity until all have ended;
 * returns the network (for its statistics), and fills in each job's
 * completion time. */
WeftNetwork *run (WeftSim *sim, const WeftTopology *topo,
                  WeftFidelity fidelity, Job *jobs, guint n);

/* Each link's bins of @net add up to its bytes. */
void check_link_bins (const WeftNetwork *net);

/* An event that starts the job of the Start @target. */
void start_job (WeftSim *sim, void *target, void *data);

/* Start each of @n jobs at its time in @at on a flow network over @topo
 * that finds affected flows by @scan, with its speed-ups off if @plain,
 * and run until all of them have ended. */
void run_at (const WeftTopology *topo, WeftScan scan, uint32_t plain,
             Job *jobs, const WeftTime *at, guint n);

/* @hosts GPUs h0, h1, ... on one switch of as many ports, their ids in
 * @ids. */
WeftScenario *load_hosts (int hosts, uint32_t *ids);
