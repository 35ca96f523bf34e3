#define LOG_TAG "agent"

/*
 * EnableNetworkIsolation on the host (docs/security.md): the ranks of an
 * isolated assignment start in a cgroup of their own (cgroup v2, joined in
 * the child before exec), and the host's firewall sends what that cgroup
 * sends through a chain that accepts only the job's hosts and loopback,
 * and refuses the controller, whatever its address, and everything else.
 * The agent's own traffic (staging, uploads, reports) is not in the
 * cgroup. The names derive from the assignment (job uid, attempt, algo),
 * so a restarted agent finds and removes what an earlier one made.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/assignment.h"
#include "agent/netiso.h"
#include "common/err.h"
#include "common/log.h"
#include "common/spawn.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define NETISO_DIR "trainagent"
#define FW_TIMEOUT_MS 20000

/* "TA-" and 16 hex digits of the FNV-1a hash of the assignment. */
static void chain_name(const struct agent_assign *a, char out[20])
{
	char key[512];
	uint64_t h = 14695981039346656037ULL;
	const char *p;

	(void)snprintf(key, sizeof(key), "%s:%d:%s",
		       a->job_uid ? a->job_uid : a->job, a->attempt, a->algo);
	for (p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	(void)snprintf(out, 20, "TA-%016llx", (unsigned long long)h);
}

/* Where cgroup v2 is mounted (the unified hierarchy), or NULL. */
static char *cgroup2_mount(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	char *found = NULL;

	if (!f)
		return NULL;
	while (!found && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - cgroup2 ");
		char *mnt;
		int i;

		if (!sep)
			continue;
		/* id parent major:minor root MOUNTPOINT ... */
		mnt = line;
		for (i = 0; i < 4 && mnt; i++) {
			mnt = strchr(mnt, ' ');
			if (mnt)
				mnt++;
		}
		if (mnt && strchr(mnt, ' ')) {
			*strchr(mnt, ' ') = '\0';
			found = xstrdup(mnt);
		}
	}
	fclose(f);
	return found;
}

static const char *firewall(int v6)
{
	static const char *const v4[] = { "/usr/sbin/iptables",
					  "/sbin/iptables" };
	static const char *const v6p[] = { "/usr/sbin/ip6tables",
					   "/sbin/ip6tables" };
	const char *const *c = v6 ? v6p : v4;
	size_t i;

	for (i = 0; i < 2; i++)
		if (!access(c[i], X_OK))
			return c[i];
	return v6 ? "ip6tables" : "iptables";
}

/* Runs the firewall with up to 12 arguments; 0 or ERR_IO (err says). */
static int fw(int v6, struct buf *err, const char *a1, ...)
{
	const char *argv[16];
	struct spawn_result res = SPAWN_RESULT_INIT;
	va_list ap;
	size_t n = 0;
	int ret = 0;

	argv[n++] = firewall(v6);
	argv[n++] = "-w";
	argv[n++] = a1;
	va_start(ap, a1);
	while (n < 15 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	if (spawn_capture((char *const *)argv, NULL, FW_TIMEOUT_MS, 4096,
			  &res) ||
	    !spawn_ok(&res)) {
		if (err) {
			(void)buf_addf(err, "%s %s %s: ", argv[0], a1,
				       n > 3 ? argv[3] : "");
			spawn_last_line(&res, err);
		}
		ret = ERR_IO;
	}
	buf_release(&res.out);
	buf_release(&res.err);
	return ret;
}

/* The controller's host and port, from its URL. */
static int controller_of(const char *url, char *host, size_t hsize,
			 char *port, size_t psize)
{
	const char *p = strstr(url, "://");
	const char *end, *colon;
	int https = !strncmp(url, "https", 5);

	p = p ? p + 3 : url;
	end = p + strcspn(p, "/");
	if (*p == '[') {
		const char *close = memchr(p, ']', (size_t)(end - p));

		if (!close)
			return -1;
		(void)snprintf(host, hsize, "%.*s", (int)(close - p - 1), p + 1);
		colon = close[1] == ':' ? close + 1 : NULL;
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		(void)snprintf(host, hsize, "%.*s",
			       (int)((colon ? colon : end) - p), p);
	}
	if (colon)
		(void)snprintf(port, psize, "%.*s", (int)(end - colon - 1),
			       colon + 1);
	else
		(void)snprintf(port, psize, "%s", https ? "443" : "80");
	return 0;
}

/* Refuses TCP to the controller's addresses of one family. */
static int refuse_controller(int v6, const char *chain, const char *host,
			     const char *port, struct buf *err)
{
	struct addrinfo hints, *res = NULL, *ai;
	char addr[INET6_ADDRSTRLEN];
	int ret = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = v6 ? AF_INET6 : AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	ret = fw(v6, err, "-A", chain, "-p", "tcp", "-d",
		 v6 ? "::1" : "127.0.0.0/8", "--dport", port, "-j", "REJECT",
		 "--reject-with", "tcp-reset", (char *)NULL);
	if (ret || getaddrinfo(host, port, &hints, &res))
		return ret;
	for (ai = res; ai && !ret; ai = ai->ai_next) {
		const void *sa =
			v6 ? (const void *)&((struct sockaddr_in6 *)ai->ai_addr)
				     ->sin6_addr :
			     (const void *)&((struct sockaddr_in *)ai->ai_addr)
				     ->sin_addr;

		if (!inet_ntop(ai->ai_family, sa, addr, sizeof(addr)))
			continue;
		ret = fw(v6, err, "-A", chain, "-p", "tcp", "-d", addr,
			 "--dport", port, "-j", "REJECT", "--reject-with",
			 "tcp-reset", (char *)NULL);
	}
	freeaddrinfo(res);
	return ret;
}

/* Accepts the job's hosts' addresses of one family. */
static int accept_hosts(int v6, const char *chain,
			const struct api_assignment *s, struct buf *err)
{
	unsigned char bin[16];
	size_t i;
	int ret = 0;

	ret = fw(v6, err, "-A", chain, "-d", v6 ? "::1" : "127.0.0.1", "-j",
		 "ACCEPT", (char *)NULL);
	for (i = 0; !ret && s->addresses && s->addresses[i]; i++) {
		if (inet_pton(v6 ? AF_INET6 : AF_INET, s->addresses[i], bin) !=
		    1)
			continue;
		ret = fw(v6, err, "-A", chain, "-d", s->addresses[i], "-j",
			 "ACCEPT", (char *)NULL);
	}
	return ret;
}

static int has_ipv6(void)
{
	struct stat st;

	return !stat("/proc/net/if_inet6", &st) && st.st_size > 0;
}

static void teardown_family(int v6, const char *chain, const char *path)
{
	/* Each may find nothing to remove; that is fine. */
	(void)fw(v6, NULL, "-D", "OUTPUT", "-m", "cgroup", "--path", path,
		 "-j", chain, (char *)NULL);
	(void)fw(v6, NULL, "-F", chain, (char *)NULL);
	(void)fw(v6, NULL, "-X", chain, (char *)NULL);
}

static int setup_family(int v6, const char *chain, const char *path,
			const struct agent_assign *a, char *const *controllers,
			struct buf *err)
{
	char host[256], port[16];
	int ret = fw(v6, err, "-N", chain, (char *)NULL);
	size_t i;

	/* Every member of a replicated controller. */
	for (i = 0; !ret && controllers[i]; i++) {
		if (controller_of(controllers[i], host, sizeof(host), port,
				  sizeof(port)))
			continue; /* checked by agent_netiso_setup() */
		ret = refuse_controller(v6, chain, host, port, err);
	}
	ret = ret ? ret : accept_hosts(v6, chain, &a->spec, err);
	ret = ret ? ret :
		    fw(v6, err, "-A", chain, "-p", "tcp", "-j", "REJECT",
		       "--reject-with", "tcp-reset", (char *)NULL);
	ret = ret ? ret :
		    fw(v6, err, "-A", chain, "-j", "REJECT", (char *)NULL);
	ret = ret ? ret :
		    fw(v6, err, "-I", "OUTPUT", "-m", "cgroup", "--path", path,
		       "-j", chain, (char *)NULL);
	return ret;
}

void agent_netiso_teardown(struct agent_assign *a)
{
	char chain[20];
	char path[64];
	char *mnt;
	struct buf dir = BUF_INIT;

	/* An agent that adopted the assignment has no path, yet rules. */
	if (!a->netiso_procs && !(a->have_spec && a->spec.network_isolation))
		return;
	chain_name(a, chain);
	(void)snprintf(path, sizeof(path), NETISO_DIR "/%s", chain);
	teardown_family(0, chain, path);
	teardown_family(1, chain, path);
	mnt = cgroup2_mount();
	if (mnt) {
		(void)buf_addf(&dir, "%s/%s", mnt, path);
		if (rmdir(dir.data) && errno != ENOENT)
			log_warn("%s/%s: cannot remove %s: %s", a->job,
				 a->algo, dir.data, strerror(errno));
	}
	free(mnt);
	buf_release(&dir);
	FREE_AND_NULL(a->netiso_procs);
}

int agent_netiso_setup(char *const *controllers, struct agent_assign *a,
		       struct buf *err)
{
	char chain[20], path[64], host[256], port[16];
	size_t i;
	struct buf dir = BUF_INIT;
	char *mnt = cgroup2_mount();
	int ret = 0;

	chain_name(a, chain);
	(void)snprintf(path, sizeof(path), NETISO_DIR "/%s", chain);
	if (!mnt) {
		(void)buf_adds(err, "EnableNetworkIsolation: this host has no "
				    "cgroup v2 hierarchy mounted");
		return ERR_IO;
	}
	(void)buf_addf(&dir, "%s/" NETISO_DIR, mnt);
	if (mkdir(dir.data, 0755) && errno != EEXIST)
		ret = ERR_IO;
	(void)buf_addf(&dir, "/%s", chain);
	if (!ret && mkdir(dir.data, 0755) && errno != EEXIST)
		ret = ERR_IO;
	if (ret) {
		(void)buf_addf(err, "EnableNetworkIsolation: cannot make %s: %s",
			       dir.data, strerror(errno));
		goto out;
	}
	(void)buf_adds(&dir, "/cgroup.procs");
	a->netiso_procs = xstrdup(dir.data);
	for (i = 0; controllers[i]; i++)
		if (controller_of(controllers[i], host, sizeof(host), port,
				  sizeof(port))) {
			(void)buf_addf(err, "EnableNetworkIsolation: cannot "
					    "read the controller's address "
					    "from its URL");
			ret = ERR_INVALID;
			goto out;
		}
	/* What an earlier agent left for this assignment goes first. */
	teardown_family(0, chain, path);
	teardown_family(1, chain, path);
	ret = setup_family(0, chain, path, a, controllers, err);
	if (!ret && has_ipv6())
		ret = setup_family(1, chain, path, a, controllers, err);
	if (ret) {
		struct buf why = BUF_INIT;

		(void)buf_addf(&why, "EnableNetworkIsolation: cannot set up "
				     "the firewall: %s",
			       err->data);
		buf_reset(err);
		(void)buf_adds(err, why.data);
		buf_release(&why);
		agent_netiso_teardown(a);
		goto out;
	}
	log_info("%s/%s: network isolation on (%s)", a->job, a->algo, chain);
out:
	free(mnt);
	buf_release(&dir);
	return ret;
}
