#define LOG_TAG "ctrl"
/*
 * trainctld as a member of a replicated controller (controller/member.h):
 * a follower until elected, then today's controller on the replicated
 * store.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/member.h"
#include "controller/ctrl.h"
#include "ha/ha.h"
#include "common/err.h"
#include "common/log.h"
#include "common/banned.h"

/* The largest body a follower relays, either way. */
#define RELAY_MAX (256L << 20)

/* How often a follower looks whether it leads now. */
#define FOLLOW_POLL_MS 20

static struct ha_config member_cfg;
static struct ha *member_ha;

static int member_config(const struct ctrl_config *cfg, char **argv,
			 struct buf *err)
{
	const struct ha_member *me;
	struct buf b = BUF_INIT;
	int ret;

	ret = ha_config_parse_peers(&member_cfg, cfg->peers,
				    (unsigned)cfg->member, err);
	if (ret)
		return ret;
	me = ha_config_member(&member_cfg, member_cfg.self);
	(void)buf_addf(&b, "http://%s", cfg->listen);
	if (strcmp(me->api_url, b.data)) {
		(void)buf_addf(err,
			       "--peers names %s as member %u's API, but "
			       "--listen is %s",
			       me->api_url, me->id, cfg->listen);
		buf_release(&b);
		ha_config_release(&member_cfg);
		return ERR_INVALID;
	}
	buf_reset(&b);
	(void)buf_addf(&b, "%s/raft", cfg->state_dir);
	member_cfg.dir = buf_detach(&b, NULL);
	member_cfg.election_ms = (unsigned)cfg->ha_election_ms;
	member_cfg.heartbeat_ms = (unsigned)cfg->ha_heartbeat_ms;
	member_cfg.snapshot_entries = (unsigned)cfg->ha_snapshot_entries;
	member_cfg.argv = argv;
	return 0;
}

/* Waits until this member leads (0) or a signal asks to stop (1). */
static int wait_leading(const sigset_t *set)
{
	struct timespec ts = { 0, FOLLOW_POLL_MS * 1000000L };

	while (!ha_ready(member_ha)) {
		int sig = sigtimedwait(set, NULL, &ts);

		if (sig > 0 && sig != SIGHUP) {
			log_info("signal %d: shutting down", sig);
			return 1;
		}
	}
	return 0;
}

int ctrl_member_follow(struct ctrl_ctx *ctx, char **argv, const sigset_t *set,
		       struct buf *err)
{
	struct ha_proxy *proxy = NULL;
	int ret;

	ret = member_config(&ctx->cfg, argv, err);
	if (ret)
		return ret;
	ret = ha_start(&member_cfg, ctx->db, &member_ha, err);
	if (ret)
		return ret;
	ret = ha_proxy_start(member_ha, ctx->cfg.listen, RELAY_MAX, &proxy,
			     err);
	if (ret)
		return ret;
	log_info("member %u follows: the API on %s goes to the leader",
		 member_cfg.self, ctx->cfg.listen);
	ret = wait_leading(set);
	ha_proxy_stop(proxy);
	if (!ret)
		log_info("member %u leads: starting the controller",
			 member_cfg.self);
	return ret;
}

int ctrl_member_serving(void)
{
	return !member_ha || ha_serving(member_ha);
}

uint64_t ctrl_member_term(void)
{
	return member_ha ? ha_term(member_ha) : 0;
}

int ctrl_member_check_term(const char *seen, struct buf *why)
{
	unsigned long long t;
	uint64_t mine;
	char *end;

	if (!seen || !member_ha)
		return 0;
	errno = 0;
	t = strtoull(seen, &end, 10);
	if (errno || end == seen || *end || *seen < '0' || *seen > '9') {
		(void)buf_addf(why, "X-Trainctl-Term: '%.40s' is not a term",
			       seen);
		return 400;
	}
	mine = ha_term(member_ha);
	if (t <= mine)
		return 0;
	(void)buf_addf(why,
		       "member %u leads in term %llu, but the caller has seen "
		       "term %llu: a newer leader exists; try another member",
		       member_cfg.self, (unsigned long long)mine, t);
	return 503;
}

void ctrl_member_stop(void)
{
	if (!member_ha)
		return;
	ha_stop(member_ha);
	member_ha = NULL;
	free(member_cfg.dir);
	ha_config_release(&member_cfg);
}
