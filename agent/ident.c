/*
 * Who a job's processes run as. A key with a trainctl_user runs its ranks,
 * and the workers that read and write its job folder (staging, checkpoint
 * mirror, packing), as that Unix user of this host: looked up here by
 * name (uids may differ between hosts), set after fork and before exec as
 * OpenSSH's session.c does (initgroups-style supplementary groups, then
 * gid, then uid, each checked), and never regained.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <errno.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/ident.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

int agent_ident_lookup(const char *user, struct agent_ident *id,
		       struct buf *err)
{
	struct passwd pw, *found = NULL;
	char scratch[4096];
	int n = AGENT_IDENT_MAX_GROUPS;
	int rc;

	memset(id, 0, sizeof(*id));
	if (!user)
		return 0;
	rc = getpwnam_r(user, &pw, scratch, sizeof(scratch), &found);
	if (rc || !found) {
		(void)buf_addf(err,
			       "the job's user '%.64s' does not exist on this "
			       "host%s%s",
			       user, rc ? ": " : "", rc ? strerror(rc) : "");
		return ERR_INVALID;
	}
	if (getgrouplist(user, pw.pw_gid, id->groups, &n) < 0) {
		(void)buf_addf(err,
			       "the job's user '%.64s' is in more than %d "
			       "groups",
			       user, AGENT_IDENT_MAX_GROUPS);
		return ERR_INVALID;
	}
	id->set = 1;
	id->uid = pw.pw_uid;
	id->gid = pw.pw_gid;
	id->n_groups = n;
	return 0;
}

int agent_ident_become(const struct agent_ident *id)
{
	if (!id || !id->set)
		return 0;
	/* An agent that is not root can only run jobs as itself. */
	if (geteuid() != 0 && id->uid == geteuid())
		return 0;
	if (setgroups((size_t)id->n_groups, id->groups) ||
	    setresgid(id->gid, id->gid, id->gid) ||
	    setresuid(id->uid, id->uid, id->uid))
		return -1;
	/* Root must be gone for good, not just out of the effective ids. */
	if (id->uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) {
		errno = EPERM;
		return -1;
	}
	/* Not even the same user may ptrace it or read its memory (the
	 * workers hold the host's token). */
	(void)prctl(PR_SET_DUMPABLE, 0);
	return 0;
}

static const struct agent_ident *chown_id;

static int chown_one(const char *path, const struct stat *st, int flag,
		     struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return lchown(path, chown_id->uid, chown_id->gid) ? -1 : 0;
}

int agent_ident_chown_tree(const char *path, const struct agent_ident *id,
			   int mode, struct buf *err)
{
	if (!id->set)
		return 0;
	/* The agent is single-threaded: a static for nftw's callback. */
	chown_id = id;
	if (nftw(path, chown_one, 16, FTW_PHYS) ||
	    (mode && chmod(path, (mode_t)mode))) {
		(void)buf_addf(err, "cannot give %s to the job's user: %s",
			       path, strerror(errno));
		return ERR_IO;
	}
	return 0;
}

int agent_ident_resolve(struct agent_ident *id, const char *user,
			struct buf *err)
{
	if (id->set || !user)
		return 0;
	return agent_ident_lookup(user, id, err);
}
