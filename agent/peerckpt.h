#ifndef AGENT_PEERCKPT_H
#define AGENT_PEERCKPT_H

/*
 * The copies of a job's checkpoints in a host's memory (agent/memckpt.h),
 * shared with the job's other hosts (docs/checkpoints.md, "Copies on
 * another host"), so that an attempt placed on another host (a spare that
 * replaced a lost one) restores at network speed:
 *
 *   - each agent with --peer-checkpoint-port serves (agent/peerserve.h),
 * read-only, the copies it holds: its own (<root>/<uid>/) and those other hosts
 * pushed to it
 *     (<root>/.peer/<uid>/), to the job's hosts only (their addresses, and
 *     the job's token from the controller as a Bearer);
 *   - after each copy is made, the sync worker pushes the new folders to
 *     the next host of the job (algo-(i+1 mod n)), which keeps the newest
 *     two per rank under its own --memory-checkpoint-mb;
 *   - a restore asks this host's own server (the copies pushed here), then
 *     the attempt's other hosts (the next one first) for a copy whose
 *     MANIFEST.json is byte for byte the store's (the fence stays in
 *     agent_memckpt_restore()).
 *
 * Paths on the wire, relative to http://<address>:<port>:
 *   GET /checkpoints/<uid>                   the copy folders held, a line
 *                                            each
 *   GET /checkpoints/<uid>/<folder>          its files, "name size" lines
 *   GET /checkpoints/<uid>/<folder>/<file>   a file
 *   PUT /checkpoints/<uid>/<folder>/<file>   a file pushed; MANIFEST.json
 *                                            last, which completes it
 */
#include <stdint.h>

#include "common/buf.h"

struct agent_config;
struct api_assignment;
struct agent_memckpt_peers;

/* Longest job uid served. */
#define AGENT_PEERCKPT_UID_MAX 128

/* A request's path split (agent_peerckpt_path()). */
struct agent_peerckpt_path {
	char uid[AGENT_PEERCKPT_UID_MAX + 1];
	char folder[256]; /* "" for the list of folders */
	char file[256];	  /* "" for the list of files */
};

/*
 * Splits url ("/checkpoints/<uid>[/<folder>[/<file>]]"): uid of letters,
 * digits, '-' and '_'; folder a copy's name (step-S.rank-R.a<N>); file a
 * plain name. 0, or ERR_INVALID for anything else. Pure.
 */
int agent_peerckpt_path(const char *url, struct agent_peerckpt_path *p);

/*
 * The order in which host i of n asks the others for copies: i+1 first
 * (the host its own copies were pushed to), then i+2, ..., i-1; into
 * order[0..n-2]. Returns how many (0 when n < 2). Pure.
 */
size_t agent_peerckpt_order(size_t i, size_t n, size_t *order);

/*
 * The holders for agent_memckpt_restore(): this host's own server first
 * (labelled NULL: the copies other hosts pushed here), then the attempt's
 * other hosts in agent_peerckpt_order(). pe->n is 0 when peers are off or
 * the job has one host; release pe with agent_peerckpt_holders_release().
 */
void agent_peerckpt_holders(const struct agent_config *cfg,
			    const struct api_assignment *s,
			    struct agent_memckpt_peers *pe);
void agent_peerckpt_holders_release(struct agent_memckpt_peers *pe);

struct agent_peerckpt_push {
	const char *to; /* the host pushed to ("algo-2"), NULL: none */
	size_t folders;
	int64_t bytes;
};

/*
 * Pushes the copies of s's job under root that the next host of the
 * attempt lacks (same name, or same step and rank with the same
 * manifest) to it. In the sync worker, as the job's user. 0 (also when
 * there is nothing to do) or an error code with err.
 */
int agent_peerckpt_push(const struct agent_config *cfg,
			const struct api_assignment *s, const char *root,
			struct agent_peerckpt_push *out, struct buf *err);

#endif
