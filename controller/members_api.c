#define LOG_TAG "members"
/*
 * The members of a replicated controller, answered by the leader
 * (controller/members_api.h): each change is made in raft's
 * configuration and in the store's table of members (db/members.h)
 * together, one at a time.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/ha_members.h"
#include "controller/ctrl.h"
#include "controller/member.h"
#include "controller/members_api.h"
#include "controller/obs/prom.h"
#include "controller/reply.h"
#include "db/members.h"
#include "ha/ha.h"
#include "common/err.h"
#include "common/log.h"
#include "common/banned.h"

/* One membership change at a time: a second is refused (409). */
static pthread_mutex_t change_lock = PTHREAD_MUTEX_INITIALIZER;

#define NOT_MEMBER "this controller is not replicated (no --peers)"

/* A member's API URL: the store's, else --peers', else NULL. */
static const char *url_of(const struct db_member *rows, size_t n, unsigned id)
{
	const struct ha_member *p;
	size_t i;

	for (i = 0; i < n; i++)
		if (rows[i].id == id)
			return rows[i].api_url;
	p = ctrl_member_peers() ? ha_config_member(ctrl_member_peers(), id) :
				  NULL;
	return p ? p->api_url : NULL;
}

/* Fills st and rows; 0, or an answer in resp. */
static int look(struct ctrl_ctx *ctx, struct ha_status *st,
		struct db_member **rows, size_t *n, struct ctrl_response *resp)
{
	struct buf err = BUF_INIT;
	int ret;

	*rows = NULL;
	*n = 0;
	if (!ctrl_member_ha()) {
		ctrl_reply_err(resp, CTRL_E_NOT_FOUND, NOT_MEMBER);
		return -1;
	}
	ret = ha_status(ctrl_member_ha(), st, &err);
	if (ret)
		ctrl_reply_error(resp, 503, "ServiceUnavailable", err.data);
	else if ((ret = db_members_list(ctx->db, rows, n, &err)))
		ctrl_reply_err_code(resp, ret, err.data);
	buf_release(&err);
	return ret;
}

static void answer(const struct ha_status *st, const struct db_member *rows,
		   size_t n, struct ctrl_response *resp)
{
	struct api_member m[HA_MAX_MEMBERS];
	struct api_members v = { st->term, st->leader_id, st->last_index, m,
				 st->n };
	struct buf out = BUF_INIT;
	size_t i;

	for (i = 0; i < st->n; i++) {
		const struct ha_member_status *s = &st->members[i];

		m[i].id = s->id;
		m[i].raft_address = s->raft_addr;
		m[i].api_url = url_of(rows, n, s->id);
		m[i].role = ha_role_name(s->role);
		m[i].reachable = s->reachable;
		m[i].lag = s->lag;
	}
	if (api_members_build(&v, &out))
		ctrl_reply_err_code(resp, ERR_INTERNAL, "cannot answer");
	else
		ctrl_reply_json(resp, &out);
	buf_release(&out);
}

void ctrl_members_list_route(struct ctrl_ctx *ctx, struct ctrl_response *resp)
{
	struct ha_status st;
	struct db_member *rows;
	size_t n;

	if (!look(ctx, &st, &rows, &n, resp))
		answer(&st, rows, n, resp);
	db_members_free(rows, n);
}

/*
 * Whether a new member m clashes with one there is (raft's or the
 * store's): 0, or ERR_CONFLICT with err.
 */
static int clash(const struct ha_status *st, const struct db_member *rows,
		 size_t n, const struct db_member *m, struct buf *err)
{
	const struct ha_member_status *had = ha_status_member(st, m->id);
	size_t i;

	/* A spare or standby at the same address: an add to finish. */
	if (had && (had->role == HA_ROLE_LEADER || had->role == HA_ROLE_VOTER ||
		    strcmp(had->raft_addr, m->raft_address))) {
		(void)buf_addf(err, "member %u is a member already", m->id);
		return ERR_CONFLICT;
	}
	if (!had && st->n >= HA_MAX_MEMBERS) {
		(void)buf_addf(err, "a cluster has at most %d members",
			       HA_MAX_MEMBERS);
		return ERR_CONFLICT;
	}
	for (i = 0; i < st->n; i++)
		if (st->members[i].id != m->id &&
		    !strcmp(st->members[i].raft_addr, m->raft_address)) {
			(void)buf_addf(err,
				       "member %u has raft address %s already",
				       st->members[i].id, m->raft_address);
			return ERR_CONFLICT;
		}
	for (i = 0; i < n; i++)
		if (rows[i].id != m->id && ha_status_member(st, rows[i].id) &&
		    !strcmp(rows[i].api_url, m->api_url)) {
			(void)buf_addf(err, "member %u has API URL %s already",
				       rows[i].id, m->api_url);
			return ERR_CONFLICT;
		}
	return 0;
}

/* The change's outcome as an answer: a failure of raft's is 503. */
static void change_failed(int ret, const char *why, struct ctrl_response *resp)
{
	if (ret == ERR_CONFLICT)
		ctrl_reply_err(resp, CTRL_E_CONFLICT, why);
	else if (ret == ERR_IO)
		ctrl_reply_error(resp, 503, "ServiceUnavailable", why);
	else
		ctrl_reply_err_code(resp, ret, why);
}

/* Adds m (checked) in the store, then in raft. 0 or a code with err. */
static int add_member(struct ctrl_ctx *ctx, const struct db_member *m,
		      struct buf *err)
{
	struct ha_status st;
	int ret = db_member_put(ctx->db, m, err);

	if (ret)
		return ret;
	ret = ha_member_add(ctrl_member_ha(), m->id, m->raft_address, err);
	if (ret) {
		struct buf e2 = BUF_INIT;

		/* Not in raft's configuration at all: the row goes. */
		if (!ha_status(ctrl_member_ha(), &st, &e2) &&
		    !ha_status_member(&st, m->id))
			(void)db_member_delete(ctx->db, m->id, &e2);
		buf_release(&e2);
		return ret;
	}
	log_info("member %u (%s, %s) added", m->id, m->raft_address,
		 m->api_url);
	return 0;
}

void ctrl_members_add_route(struct ctrl_ctx *ctx, const char *body, size_t len,
			    struct ctrl_response *resp)
{
	struct ha_status st;
	struct db_member *rows;
	struct db_member m = { 0, NULL, NULL };
	struct buf err = BUF_INIT;
	unsigned long id = 0;
	size_t n;
	int ret;

	if (look(ctx, &st, &rows, &n, resp))
		goto out;
	ret = api_member_add_parse(body, len, &id, &m.raft_address, &m.api_url,
				   &err);
	if (!ret)
		ret = ha_member_check(id, m.raft_address, m.api_url, &err);
	m.id = (unsigned)id;
	if (!ret)
		ret = clash(&st, rows, n, &m, &err);
	if (!ret && pthread_mutex_trylock(&change_lock)) {
		(void)buf_adds(&err, "another membership change is under way: "
				     "send this one once it is done");
		ret = ERR_CONFLICT;
	} else if (!ret) {
		ret = add_member(ctx, &m, &err);
		pthread_mutex_unlock(&change_lock);
	}
	if (ret) {
		change_failed(ret, err.data, resp);
		goto out;
	}
	db_members_free(rows, n);
	if (!look(ctx, &st, &rows, &n, resp))
		answer(&st, rows, n, resp);
out:
	db_members_free(rows, n);
	free(m.raft_address);
	free(m.api_url);
	buf_release(&err);
}

/* Whether member id may be removed: 0, or a code with err. */
static int removable(const struct ha_status *st, unsigned long id,
		     struct buf *err)
{
	const struct ha_member_status *s;
	size_t i, voters = 0;

	s = id <= 1000000 ? ha_status_member(st, (unsigned)id) : NULL;
	if (!s) {
		(void)buf_addf(err, "member %lu is not a member", id);
		return ERR_NOTFOUND;
	}
	if (s->role == HA_ROLE_LEADER) {
		(void)buf_addf(err,
			       "member %lu leads: stop it (another member "
			       "leads within about two seconds), then remove "
			       "it",
			       id);
		return ERR_CONFLICT;
	}
	for (i = 0; i < st->n; i++)
		voters += st->members[i].role == HA_ROLE_LEADER ||
			  st->members[i].role == HA_ROLE_VOTER;
	if (s->role == HA_ROLE_VOTER && voters <= 2) {
		(void)buf_addf(err,
			       "removing member %lu would leave one voter: "
			       "add a member first",
			       id);
		return ERR_CONFLICT;
	}
	return 0;
}

void ctrl_members_remove_route(struct ctrl_ctx *ctx, const char *param,
			       struct ctrl_response *resp)
{
	struct ha_status st;
	struct db_member *rows;
	struct buf err = BUF_INIT;
	unsigned long id = 0;
	char *end = NULL;
	size_t n;
	int ret;

	if (look(ctx, &st, &rows, &n, resp))
		goto out;
	if (*param >= '0' && *param <= '9')
		id = strtoul(param, &end, 10);
	if (!end || *end || !id) {
		(void)buf_addf(&err, "'%.64s' is not a member id", param);
		ret = ERR_INVALID;
	} else {
		ret = removable(&st, id, &err);
	}
	if (!ret && pthread_mutex_trylock(&change_lock)) {
		(void)buf_adds(&err, "another membership change is under way: "
				     "send this one once it is done");
		ret = ERR_CONFLICT;
	} else if (!ret) {
		ret = ha_member_remove(ctrl_member_ha(), (unsigned)id, &err);
		if (!ret)
			ret = db_member_delete(ctx->db, (unsigned)id, &err);
		pthread_mutex_unlock(&change_lock);
	}
	if (ret) {
		change_failed(ret, err.data, resp);
		goto out;
	}
	log_info("member %lu removed", id);
	db_members_free(rows, n);
	if (!look(ctx, &st, &rows, &n, resp))
		answer(&st, rows, n, resp);
out:
	db_members_free(rows, n);
	buf_release(&err);
}

void ctrl_members_render_metrics(struct ctrl_ctx *ctx, struct buf *out)
{
	struct ctrl_prom_sample s;
	struct ha_status st;
	struct buf err = BUF_INIT;
	size_t i;

	(void)ctx;
	if (!ctrl_member_ha() || ha_status(ctrl_member_ha(), &st, &err)) {
		buf_release(&err);
		return;
	}
	ctrl_prom_family(out, "trainctl_ha_members", "gauge",
			 "Members in raft's configuration.");
	ctrl_prom_sample_start(&s, out, "trainctl_ha_members");
	ctrl_prom_value(&s, "%zu", st.n);
	ctrl_prom_family(out, "trainctl_ha_leader", "gauge",
			 "The id of the member that leads (this one).");
	ctrl_prom_sample_start(&s, out, "trainctl_ha_leader");
	ctrl_prom_value(&s, "%u", st.leader_id);
	ctrl_prom_family(out, "trainctl_ha_term", "gauge", "Raft's term.");
	ctrl_prom_sample_start(&s, out, "trainctl_ha_term");
	ctrl_prom_value(&s, "%llu", (unsigned long long)st.term);
	ctrl_prom_family(out, "trainctl_ha_member_lag_entries", "gauge",
			 "Log entries the leader holds that a member does "
			 "not.");
	for (i = 0; i < st.n; i++) {
		ctrl_prom_sample_start(&s, out,
				       "trainctl_ha_member_lag_entries");
		ctrl_prom_label_int(&s, "member", (int)st.members[i].id);
		ctrl_prom_label(&s, "role", ha_role_name(st.members[i].role));
		ctrl_prom_value(&s, "%llu",
				(unsigned long long)st.members[i].lag);
	}
	ctrl_prom_family(out, "trainctl_ha_member_reachable", "gauge",
			 "1 when the leader heard from a member within an "
			 "election timeout.");
	for (i = 0; i < st.n; i++) {
		ctrl_prom_sample_start(&s, out, "trainctl_ha_member_reachable");
		ctrl_prom_label_int(&s, "member", (int)st.members[i].id);
		ctrl_prom_value(&s, "%d", st.members[i].reachable);
	}
}
