/* CUDA graph replays: the hooked calls captured into each graph, carried
 * over to the executable graphs made from it, and counted again at each
 * launch of one (amp_prof_replayed), so that the report counts the calls
 * a program makes by replaying what it captured. A decision taken while
 * auto was still measuring the call's (site, shape) is replayed as
 * captured: it is counted as provisional. */
#ifndef AMP_REPLAY_H
#define AMP_REPLAY_H

#include "base/status.h"
#include "measure/prof.h"

/* A hooked call of outcome `outcome` on w->stream, which is being
 * captured into a graph: remembered as one of that graph's calls.
 * Nothing when the stream is not capturing. */
void amp_replay_captured(const struct amp_prof_what *w,
                         enum amp_outcome outcome);

/* `exec` was instantiated from `graph`: it replays graph's calls. */
void amp_replay_instantiated(void *graph, void *exec);

/* `exec` was updated with `graph` (cuGraphExecUpdate: a graph of the same
 * topology, its nodes' parameters taken): it replays graph's calls now,
 * none when graph has none. */
void amp_replay_updated(void *graph, void *exec);

/* The update of `exec` with `graph` failed (the driver found their nodes
 * unlike): when the shim ran one of the calls they share differently in
 * the two captures (FP32 in one and converted in the other, or in two
 * modes), which gives the two graphs other nodes, says so once, as a
 * warning naming the call. */
void amp_replay_update_failed(void *graph, void *exec);

/* A node of `parent` embeds `child` (cuGraphAddChildGraphNode, which
 * clones the child as it is): parent's calls gain child's. */
void amp_replay_child(void *parent, void *child);

/* `clone` is a copy of `graph` as it is (cuGraphClone): it has graph's
 * calls. */
void amp_replay_cloned(void *clone, void *graph);

/* `exec` was launched: its calls counted replayed once. */
void amp_replay_launched(void *exec);

/* The graph or executable graph `handle` was destroyed (its address may
 * come back as another's). */
void amp_replay_gone(void *handle);

/* 1 once any graph has a captured call: until then the graph hooks have
 * nothing to carry (a cold capture, before the shim set up in any
 * context, counts its calls too). */
int amp_replay_any(void);

/* Graph launches of executable graphs with calls the shim counted. */
unsigned long long amp_replay_launches(void);

/* Forgets everything (a forked child starts clean). */
void amp_replay_forget(void);

#endif
