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
#include "db/members.h"
#include "common/err.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* The largest body a follower holds in memory, either way; a larger one
 * is spooled to a file of the state dir. */
#define RELAY_MAX (8L << 20)

/* How often a follower looks whether it leads now. */
#define FOLLOW_POLL_MS 20

static struct ha_config member_cfg;
static struct ha *member_ha;

static void ctrl_member_stop_config(void);

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
	member_cfg.join = cfg->ha_join;
	member_cfg.argv = argv;
	return 0;
}

/* The members' URLs the store holds, handed to raft's engine. */
static void load_urls(struct db *db)
{
	struct db_member *rows = NULL;
	struct ha_member *m;
	struct buf err = BUF_INIT;
	size_t i, n = 0;

	if (db_members_list(db, &rows, &n, &err)) {
		log_warn("cannot read the members: %s", err.data);
		buf_release(&err);
		return;
	}
	m = n ? xcalloc(n, sizeof(*m)) : NULL;
	for (i = 0; i < n; i++) {
		m[i].id = rows[i].id;
		m[i].raft_addr = rows[i].raft_address;
		m[i].api_url = rows[i].api_url;
	}
	ha_members_set(member_ha, m, n);
	free(m);
	db_members_free(rows, n);
}

/*
 * At the start of a leadership: the members' table names raft's
 * configuration (filled from --peers at the first, rows of members
 * removed while no leader could write are dropped, as after
 * --ha-recover).
 */
static void sync_members(struct db *db)
{
	struct ha_status st;
	struct db_member *rows = NULL;
	struct ha_member *hm = NULL;
	const struct ha_member **put;
	unsigned *del;
	struct buf err = BUF_INIT;
	size_t i, n = 0, n_put, n_del;

	if (ha_status(member_ha, &st, &err) ||
	    db_members_list(db, &rows, &n, &err)) {
		log_warn("cannot look at the members: %s", err.data);
		buf_release(&err);
		return;
	}
	hm = n ? xcalloc(n, sizeof(*hm)) : NULL;
	for (i = 0; i < n; i++)
		hm[i].id = rows[i].id;
	ha_members_plan(&st, hm, n, &member_cfg, &put, &n_put, &del, &n_del);
	for (i = 0; i < n_put; i++) {
		struct db_member m = { put[i]->id, put[i]->raft_addr,
				       put[i]->api_url };

		if (db_member_put(db, &m, &err))
			log_warn("cannot record member %u: %s", m.id, err.data);
	}
	for (i = 0; i < n_del; i++)
		if (db_member_delete(db, del[i], &err))
			log_warn("cannot forget member %u: %s", del[i],
				 err.data);
	free(put);
	free(del);
	free(hm);
	db_members_free(rows, n);
	buf_release(&err);
	load_urls(db);
}

/*
 * Waits until this member leads (0) or a signal asks to stop (1),
 * reading the members' URLs again whenever raft's configuration changes.
 */
static int wait_leading(struct db *db, const sigset_t *set)
{
	struct timespec ts = { 0, FOLLOW_POLL_MS * 1000000L };
	uint64_t version = 0;

	load_urls(db);
	while (!ha_ready(member_ha)) {
		int sig;

		if (ha_config_version(member_ha) != version) {
			version = ha_config_version(member_ha);
			load_urls(db);
		}
		sig = sigtimedwait(set, NULL, &ts);

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
	if (ctx->cfg.ha_recover) {
		ret = ha_recover(&member_cfg, err);
		if (!ret)
			log_info("member %u is the only member in %s now: "
				 "start it without --ha-recover",
				 member_cfg.self, member_cfg.dir);
		ctrl_member_stop_config();
		return ret ? ret : 1;
	}
	ret = ha_start(&member_cfg, ctx->db, &member_ha, err);
	if (ret)
		return ret;
	ret = ha_proxy_start(member_ha, ctx->cfg.listen, RELAY_MAX,
			     ctx->cfg.state_dir, &proxy, err);
	if (ret)
		return ret;
	log_info("member %u follows: the API on %s goes to the leader",
		 member_cfg.self, ctx->cfg.listen);
	ret = wait_leading(ctx->db, set);
	ha_proxy_stop(proxy);
	if (!ret) {
		log_info("member %u leads: starting the controller",
			 member_cfg.self);
		sync_members(ctx->db);
	}
	return ret;
}

struct ha *ctrl_member_ha(void)
{
	return member_ha;
}

const struct ha_config *ctrl_member_peers(void)
{
	return member_ha ? &member_cfg : NULL;
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

static void ctrl_member_stop_config(void)
{
	free(member_cfg.dir);
	member_cfg.dir = NULL;
	ha_config_release(&member_cfg);
}

void ctrl_member_stop(void)
{
	if (!member_ha)
		return;
	ha_stop(member_ha);
	member_ha = NULL;
	ctrl_member_stop_config();
}
