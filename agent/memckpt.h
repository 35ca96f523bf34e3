#ifndef AGENT_MEMCKPT_H
#define AGENT_MEMCKPT_H

/*
 * A copy of the job's latest checkpoints in the host's memory (a tmpfs
 * folder, --memory-checkpoint-dir, bounded by --memory-checkpoint-mb), so
 * that a retried attempt on this host restores them at memory speed
 * instead of reading them back from the store (docs/checkpoints.md,
 * "Copies in memory"). Only libtrainer-format folders
 * (step-<10 digits>.rank-<r>, with their MANIFEST.json) are kept.
 *
 * Layout: <root>/<job uid>/step-<step>.rank-<rank>.a<attempt>/<files>,
 * the attempt that copied it in the name. A restore uses a copy only when
 * its MANIFEST.json is byte for byte the one in the store for the step
 * the ranks will agree on: whatever the store holds was published by an
 * attempt that was current then (the fence), and the manifest names each
 * file's size and SHA-256, so a stale attempt's copy is never restored.
 */
#include <stdint.h>

#include "common/buf.h"
#include "common/strvec.h"

struct stor;

/* Copies left alone this long by any attempt are swept (ms). */
#define AGENT_MEMCKPT_TTL_MS (3600 * 1000LL)
/* Complete checkpoints kept per rank, as libtrainer's default. */
#define AGENT_MEMCKPT_KEEP 2

struct agent_memckpt_stats {
	size_t folders; /* copied */
	size_t skipped; /* over the limit */
	int64_t bytes;
};

/*
 * Brings <root>/<uid> in line with ckpt_dir: each rank's newest
 * AGENT_MEMCKPT_KEEP complete folders copied (those already there with
 * the same manifest are left), the rest removed, the total kept under
 * limit bytes (newest first; what does not fit is skipped). Runs as the
 * job's user. 0 or an error code with err.
 */
int agent_memckpt_keep(const char *root, const char *uid, int attempt,
		       const char *ckpt_dir, int64_t limit,
		       struct agent_memckpt_stats *stats, struct buf *err);

struct agent_memckpt_restore {
	long long step;	  /* the step restored */
	size_t from_mem;  /* folders copied from memory */
	size_t from_peer; /* folders fetched from another host's copies */
	size_t from_stor; /* folders read from the store */
	int64_t mem_bytes;
	int64_t peer_bytes;
	int64_t stor_bytes;
	/* Where each folder came from and which attempt made the copy,
	 * "rank 0 peer algo-2 (attempt 1), rank 1 memory (attempt 2), rank 2
	 * store" (the job's log prints it); the caller releases it. */
	struct buf record;
};

/*
 * The copies other hosts of the job hold (agent/peerckpt.h), as a restore
 * sees them: n holders, tried in order. list() fills names with the copy
 * folders holder i has ("step-S.rank-R.a<N>"), manifest() that copy's
 * MANIFEST.json text, fetch() its files into the new folder dst (adding
 * their bytes to *bytes); each returns 0 or an error code. label() names
 * the holder in the record ("algo-2"), NULL for this host itself (the
 * copies other hosts pushed here: "memory"). The restore itself compares
 * each manifest with the store's: a holder is never trusted on its own.
 */
struct agent_memckpt_peers {
	size_t n;
	int (*list)(void *arg, size_t i, struct strvec *names);
	int (*manifest)(void *arg, size_t i, const char *name, struct buf *out);
	int (*fetch)(void *arg, size_t i, const char *name, const char *dst,
		     int64_t *bytes, struct buf *err);
	const char *(*label)(void *arg, size_t i);
	void *arg;
};

/*
 * Restores the checkpoint folders of the step the ranks will agree on
 * (the newest step every rank in the store has) from uri into ckpt_dir:
 * each from its copy in memory when one with the store's manifest is
 * there, else from the first of peers (may be NULL) holding such a copy,
 * else from the store. ERR_NOTFOUND when this does not apply (no copy in
 * memory nor at a peer, files in the store outside checkpoint folders, no
 * common step): the caller restores the whole prefix as before. out's
 * record is set up here and released by the caller, whatever the result.
 */
int agent_memckpt_restore(struct stor *st, const char *uri, const char *root,
			  const char *uid, const char *ckpt_dir,
			  const struct agent_memckpt_peers *peers,
			  struct agent_memckpt_restore *out, struct buf *err);

/*
 * The copy folders (".a<N>" names) of uid under root, newest first per
 * rank, into names. For the peer server and the push. 0 or ERR_NOTFOUND
 * when root holds nothing of uid.
 */
int agent_memckpt_list(const char *root, const char *uid, struct strvec *names);

/* The text of dir/MANIFEST.json (at most 1 MiB) into out; 0 or
 * ERR_NOTFOUND. */
int agent_memckpt_manifest(const char *dir, struct buf *out);

/* Whether s is a plain file name a checkpoint folder may hold (letters,
 * digits, '.', '_', '-'; not "." or ".."). Pure. */
int agent_memckpt_file_ok(const char *s);

/*
 * The step a restore uses, from the keys under the checkpoint prefix
 * (relative to it): the newest step for which every rank seen has a
 * folder with a MANIFEST.json. ERR_NOTFOUND when some key lies outside a
 * checkpoint folder or there is no such step. Pure.
 */
int agent_memckpt_plan(const char *const *keys, size_t n, long long *step);

/* Parses "step-<10 digits>.rank-<r>" (then suffix, "" or ".a<attempt>"
 * when memory is set); 1 when it is such a name. Pure. */
int agent_memckpt_name(const char *name, size_t len, int memory,
		       long long *step, long *rank);

/* The folder of this host's copies: <dir>/<host> (several hosts may
 * share one machine's /dev/shm), as a new string. */
char *agent_memckpt_root(const char *dir, const char *host);

/* Creates root (mode 1777 as /tmp: each job's user makes its own folder
 * in it). Runs as the agent. 0 or ERR_IO with err. */
int agent_memckpt_prepare(const char *root, struct buf *err);

/* Removes copies under root untouched for AGENT_MEMCKPT_TTL_MS, except
 * those of keep_uid (may be NULL). Runs as the agent. */
void agent_memckpt_sweep(const char *root, const char *keep_uid);

#endif
