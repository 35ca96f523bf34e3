/*
 * --peers: the members of the replicated controller (ha/ha.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ha/ha.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define HA_MIN_MEMBERS 3
#define HA_MAX_ID 1000000

/* "HOST:PORT" with a port of 1..65535. */
static int addr_ok(const char *a)
{
	const char *colon = strrchr(a, ':');
	char *end;
	long port;

	if (!colon || colon == a)
		return 0;
	port = strtol(colon + 1, &end, 10);
	return *end == '\0' && end != colon + 1 && port > 0 && port < 65536;
}

int ha_member_check(unsigned long id, const char *raft_addr,
		    const char *api_url, struct buf *err)
{
	if (id < 1 || id > HA_MAX_ID) {
		(void)buf_addf(err, "member id %lu must be 1..%d", id,
			       HA_MAX_ID);
		return ERR_INVALID;
	}
	if (!addr_ok(raft_addr)) {
		(void)buf_addf(err,
			       "member %lu's raft address '%s' is not "
			       "HOST:PORT",
			       id, raft_addr);
		return ERR_INVALID;
	}
	if (strncmp(api_url, "http://", 7) || !addr_ok(api_url + 7)) {
		(void)buf_addf(err,
			       "member %lu's API URL '%s' is not "
			       "http://HOST:PORT",
			       id, api_url);
		return ERR_INVALID;
	}
	return 0;
}

/* One "ID=RAFTADDR=APIURL" (item is modified). */
static int parse_member(char *item, struct ha_member *m, struct buf *err)
{
	char *raft = strchr(item, '=');
	char *api = raft ? strchr(raft + 1, '=') : NULL;
	struct buf why = BUF_INIT;
	char *end;
	long id;

	if (!api) {
		(void)buf_addf(err, "--peers: '%s' is not ID=RAFTADDR=APIURL",
			       item);
		return ERR_INVALID;
	}
	*raft++ = '\0';
	*api++ = '\0';
	id = strtol(item, &end, 10);
	if (*end || end == item || id < 1 || id > HA_MAX_ID) {
		(void)buf_addf(err, "--peers: member id '%s' must be 1..%d",
			       item, HA_MAX_ID);
		return ERR_INVALID;
	}
	if (ha_member_check((unsigned long)id, raft, api, &why)) {
		(void)buf_addf(err, "--peers: %s", why.data);
		buf_release(&why);
		return ERR_INVALID;
	}
	m->id = (unsigned)id;
	m->raft_addr = xstrdup(raft);
	m->api_url = xstrdup(api);
	return 0;
}

static int check_members(const struct ha_config *cfg, unsigned self,
			 struct buf *err)
{
	size_t i, j;

	if (cfg->n_members < HA_MIN_MEMBERS) {
		(void)buf_addf(err,
			       "--peers: a cluster needs %d members or more, "
			       "not %zu",
			       HA_MIN_MEMBERS, cfg->n_members);
		return ERR_INVALID;
	}
	for (i = 0; i < cfg->n_members; i++)
		for (j = 0; j < i; j++)
			if (cfg->members[i].id == cfg->members[j].id ||
			    !strcmp(cfg->members[i].raft_addr,
				    cfg->members[j].raft_addr) ||
			    !strcmp(cfg->members[i].api_url,
				    cfg->members[j].api_url)) {
				(void)buf_addf(err,
					       "--peers: members %u and %u "
					       "share an id or an address",
					       cfg->members[j].id,
					       cfg->members[i].id);
				return ERR_INVALID;
			}
	if (!ha_config_member(cfg, self)) {
		(void)buf_addf(err, "--member %u is not among --peers", self);
		return ERR_INVALID;
	}
	return 0;
}

int ha_config_parse_peers(struct ha_config *cfg, const char *spec,
			  unsigned self, struct buf *err)
{
	char *copy = xstrdup(spec);
	char *item = copy;
	int ret = 0;

	cfg->members = NULL;
	cfg->n_members = 0;
	cfg->self = self;
	while (item && !ret) {
		char *next = strchr(item, ',');

		if (next)
			*next++ = '\0';
		if (cfg->n_members == HA_MAX_MEMBERS) {
			(void)buf_addf(err, "--peers: at most %d members",
				       HA_MAX_MEMBERS);
			ret = ERR_INVALID;
			break;
		}
		cfg->members =
			xrealloc(cfg->members,
				 (cfg->n_members + 1) * sizeof(*cfg->members));
		ret = parse_member(item, &cfg->members[cfg->n_members], err);
		if (!ret)
			cfg->n_members++;
		item = next;
	}
	if (!ret)
		ret = check_members(cfg, self, err);
	free(copy);
	if (ret)
		ha_config_release(cfg);
	return ret;
}

void ha_config_release(struct ha_config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->n_members; i++) {
		free(cfg->members[i].raft_addr);
		free(cfg->members[i].api_url);
	}
	free(cfg->members);
	cfg->members = NULL;
	cfg->n_members = 0;
}

const struct ha_member *ha_config_member(const struct ha_config *cfg,
					 unsigned id)
{
	size_t i;

	for (i = 0; i < cfg->n_members; i++)
		if (cfg->members[i].id == id)
			return &cfg->members[i];
	return NULL;
}
