#ifndef AGENT_IDENT_H
#define AGENT_IDENT_H

/* The Unix user a job's processes run as (agent/ident.c). */
#include <sys/types.h>

#include "common/buf.h"

#define AGENT_IDENT_MAX_GROUPS 256
struct agent_ident {
	int set; /* 0: the agent's own user */
	uid_t uid;
	gid_t gid;
	gid_t groups[AGENT_IDENT_MAX_GROUPS];
	int n_groups;
};

/* Looks up user on this host (NULL: *id unset). 0 or ERR_INVALID. */
int agent_ident_lookup(const char *user, struct agent_ident *id,
		       struct buf *err);
/* Looks user up once: nothing to do when *id is set or user is NULL. */
int agent_ident_resolve(struct agent_ident *id, const char *user,
			struct buf *err);
/* In a child: becomes id for good. 0, or -1 with errno. */
int agent_ident_become(const struct agent_ident *id);
/* Gives path and everything under it (symlinks not followed) to id;
 * mode (when not 0) for path itself. 0 or ERR_IO. */
int agent_ident_chown_tree(const char *path, const struct agent_ident *id,
			   int mode, struct buf *err);

#endif
