#ifndef AGENT_CKPTWATCH_H
#define AGENT_CKPTWATCH_H

/* The checkpoint folder's complete files, by inotify (agent/ckptwatch.c). */
#include <stddef.h>

#include "common/buf.h"
#include "storage/storage.h"

struct agent_ckpt_watch_dir {
	int wd;
	char *rel; /* "" for the folder itself */
};

struct agent_ckpt_watch {
	int fd; /* inotify, -1 when not watching */
	char *root;
	struct agent_ckpt_watch_dir *dirs;
	size_t n_dirs;
	size_t alloc_dirs;
	/* Keys relative to root, sorted, with size and mtime when complete. */
	struct stor_list complete;
	int news; /* a file completed since the last read */
};

void agent_ckpt_watch_init(struct agent_ckpt_watch *w);
/* Starts watching root and its subfolders. Returns 0 or -1 with err. */
int agent_ckpt_watch_start(struct agent_ckpt_watch *w, const char *root,
			   struct buf *err);
/* Reads pending events; returns 1 when a file completed. */
int agent_ckpt_watch_read(struct agent_ckpt_watch *w);
void agent_ckpt_watch_stop(struct agent_ckpt_watch *w);

#endif
