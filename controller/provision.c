#define LOG_TAG "prov"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libssh2.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "api/inventory.h"
#include "controller/ctrl.h"
#include "controller/files.h"
#include "controller/hosts.h"
#include "controller/provision.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define CONNECT_TIMEOUT_MS 3000
#define SSH_TIMEOUT_MS 15000
#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000
#define INVENTORY_MAX (16 << 20)

/* What a worker needs, copied so that it runs without the hosts lock. */
struct prov_job {
	struct ctrl_ctx *ctx;
	char *name;
	char *address;
	int port;
	char *user;
	char *key;
	char *known_hosts;
	int accept_new;
	char *agent_path;
	char *work_dir;
	char *token;
	/* The host's last_seen_ms when provisioning was decided. */
	int64_t seen_ms;
};

/* The SHA-256 of the agent binary, computed once. */
static int file_sha256(const char *path, char hex[65])
{
	unsigned char md[32];
	unsigned int len = 0;
	char chunk[65536];
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int i;

	if (fd < 0 || !c) {
		if (fd >= 0)
			close(fd);
		EVP_MD_CTX_free(c);
		return ERR_IO;
	}
	EVP_DigestInit_ex(c, EVP_sha256(), NULL);
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		EVP_DigestUpdate(c, chunk, (size_t)n);
	close(fd);
	EVP_DigestFinal_ex(c, md, &len);
	EVP_MD_CTX_free(c);
	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/* An external host has no address or SSH members. */
static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

int ctrl_inventory_load(struct ctrl_ctx *ctx, struct buf *err)
{
	struct api_inventory inv;
	struct buf text = BUF_INIT;
	size_t i;
	int ret;

	if (!ctx->cfg.inventory)
		return 0;
	ret = ctrl_read_file(ctx->cfg.inventory, INVENTORY_MAX, &text, err);
	if (!ret)
		ret = api_inventory_parse(text.data, text.len, &inv, err);
	buf_release(&text);
	if (ret)
		return ret;
	if (!ctx->agent_sha256[0] &&
	    file_sha256(ctx->cfg.agent_binary, ctx->agent_sha256)) {
		(void)buf_addf(err, "cannot read the agent binary '%s'",
			       ctx->cfg.agent_binary);
		api_inventory_release(&inv);
		return ERR_IO;
	}
	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < inv.n; i++) {
		struct api_inventory_host *ih = &inv.hosts[i];
		struct ctrl_host *h = ctrl_hosts_find(ctx, ih->name);
		int existed = 0;

		if (!h) {
			char *tok = ctrl_host_token(ctx, ih->name, &existed);

			h = ctrl_hosts_add(ctx, ih->name, tok);
			free(tok);
			/* A known token: its agent may still run and come
			 * back by itself; give it a deadline first. */
			h->next_provision_ms =
				existed ? time_mono_ms() +
						  ctx->cfg.host_deadline_ms :
					  0;
			if (ih->external)
				log_info("host '%s' (%s, agent started "
					 "externally) in the inventory",
					 ih->name, ih->instance_type);
			else
				log_info("host '%s' (%s:%d, %s) in the "
					 "inventory",
					 ih->name, ih->address, ih->port,
					 ih->instance_type);
		}
		h->removed = 0;
		free(h->instance_type);
		h->instance_type = xstrdup(ih->instance_type);
		free(h->rack);
		h->rack = dup_or_null(ih->rack);
		free(h->inv_address);
		h->inv_address = dup_or_null(ih->address);
		h->ssh_port = ih->port;
		free(h->ssh_user);
		h->ssh_user = xstrdup(ih->user);
		free(h->ssh_key);
		h->ssh_key = dup_or_null(ih->identity_file);
		free(h->known_hosts);
		h->known_hosts = dup_or_null(ih->known_hosts);
		h->accept_new_host_key = ih->accept_new_host_key;
		free(h->agent_path);
		h->agent_path = xstrdup(ih->agent_path);
		free(h->work_dir);
		h->work_dir = xstrdup(ih->work_dir);
		h->inventory = 1;
		h->external = ih->external;
		if (ih->cpus)
			h->cpus = ih->cpus;
		h->gpus = ih->gpus;
	}
	/* Hosts no longer listed take no new jobs. */
	for (i = 0; i < ctx->n_hosts; i++) {
		struct ctrl_host *h = ctx->hosts[i];
		size_t k;
		int listed = 0;

		if (!h->inventory)
			continue;
		for (k = 0; k < inv.n; k++)
			listed |= !strcmp(inv.hosts[k].name, h->name);
		if (!listed && !h->removed) {
			h->removed = 1;
			log_info("host '%s' removed from the inventory",
				 h->name);
		}
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	api_inventory_release(&inv);
	return 0;
}

/* Non-blocking connect with a deadline. Returns the socket or -1. */
static int tcp_connect(const char *addr, int port, struct buf *err)
{
	struct addrinfo hints, *res = NULL, *ai;
	char ports[16];
	int fd = -1;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	snprintf(ports, sizeof(ports), "%d", port);
	rc = getaddrinfo(addr, ports, &hints, &res);
	if (rc) {
		(void)buf_addf(err, "cannot resolve '%s': %s", addr,
			       gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		struct pollfd pfd;
		int soerr = 0;
		socklen_t sl = sizeof(soerr);

		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) &&
		    errno != EINPROGRESS) {
			soerr = errno;
		} else {
			pfd.fd = fd;
			pfd.events = POLLOUT;
			if (poll(&pfd, 1, CONNECT_TIMEOUT_MS) != 1)
				soerr = ETIMEDOUT;
			else
				getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr,
					   &sl);
		}
		if (!soerr) {
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
			break;
		}
		buf_reset(err);
		(void)buf_addf(err, "cannot connect to %s:%d: %s", addr, port,
			       soerr == ETIMEDOUT ? "no route (timed out)" :
						    strerror(soerr));
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

static int check_host_key(LIBSSH2_SESSION *s, const struct prov_job *j,
			  struct buf *err)
{
	LIBSSH2_KNOWNHOSTS *kh = libssh2_knownhost_init(s);
	struct libssh2_knownhost *found = NULL;
	const char *key;
	size_t len;
	int type;
	int rc;
	int ret = 0;

	if (!kh) {
		(void)buf_adds(err, "cannot check host keys");
		return ERR_AUTH;
	}
	key = libssh2_session_hostkey(s, &len, &type);
	if (libssh2_knownhost_readfile(kh, j->known_hosts,
				       LIBSSH2_KNOWNHOST_FILE_OPENSSH) < 0 &&
	    !j->accept_new) {
		(void)buf_addf(err, "cannot read known_hosts '%s'",
			       j->known_hosts);
		libssh2_knownhost_free(kh);
		return ERR_AUTH;
	}
	rc = libssh2_knownhost_checkp(kh, j->address, j->port, key, len,
				      LIBSSH2_KNOWNHOST_TYPE_PLAIN |
					      LIBSSH2_KNOWNHOST_KEYENC_RAW,
				      &found);
	if (rc == LIBSSH2_KNOWNHOST_CHECK_MATCH) {
		ret = 0;
	} else if (rc == LIBSSH2_KNOWNHOST_CHECK_MISMATCH) {
		(void)buf_addf(err,
			       "host key mismatch for %s:%d (known_hosts "
			       "'%s' holds another key): refusing to connect",
			       j->address, j->port, j->known_hosts);
		ret = ERR_AUTH;
	} else if (j->accept_new) {
		struct buf hostname = BUF_INIT;
		int ktype = type == LIBSSH2_HOSTKEY_TYPE_RSA ?
				    LIBSSH2_KNOWNHOST_KEY_SSHRSA :
#ifdef LIBSSH2_KNOWNHOST_KEY_ED25519
			    type == LIBSSH2_HOSTKEY_TYPE_ED25519 ?
				    LIBSSH2_KNOWNHOST_KEY_ED25519 :
#endif
				    LIBSSH2_KNOWNHOST_KEY_UNKNOWN;

		if (j->port == 22)
			(void)buf_adds(&hostname, j->address);
		else
			(void)buf_addf(&hostname, "[%s]:%d", j->address,
				       j->port);
		libssh2_knownhost_addc(
			kh, hostname.data, NULL, key, len, NULL, 0,
			LIBSSH2_KNOWNHOST_TYPE_PLAIN |
				LIBSSH2_KNOWNHOST_KEYENC_RAW | ktype,
			NULL);
		libssh2_knownhost_writefile(kh, j->known_hosts,
					    LIBSSH2_KNOWNHOST_FILE_OPENSSH);
		log_info("host '%s': new host key accepted and saved", j->name);
		buf_release(&hostname);
	} else {
		(void)buf_addf(err,
			       "unknown host key for %s:%d (not in "
			       "known_hosts '%s'; set accept_new_host_key to "
			       "trust it)",
			       j->address, j->port, j->known_hosts);
		ret = ERR_AUTH;
	}
	libssh2_knownhost_free(kh);
	return ret;
}

/* Runs cmd, feeding stdin_data; collects stdout into out (capped). */
/* Writes all of p[0..n) to the channel. */
static int channel_write_all(LIBSSH2_CHANNEL *ch, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = libssh2_channel_write(ch, p, n);

		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/*
 * Runs cmd; its stdin gets stdin_data, then (data_fd >= 0) the bytes of
 * that file, then EOF.
 */
static int run_cmd(LIBSSH2_SESSION *s, const char *cmd, const char *stdin_data,
		   int data_fd, struct buf *out, int *status, struct buf *err)
{
	LIBSSH2_CHANNEL *ch = libssh2_channel_open_session(s);
	char chunk[65536];
	ssize_t n;

	*status = -1;
	if (!ch) {
		(void)buf_adds(err, "cannot open an SSH channel");
		return ERR_IO;
	}
	if (libssh2_channel_exec(ch, cmd)) {
		(void)buf_adds(err, "cannot run a command over SSH");
		libssh2_channel_free(ch);
		return ERR_IO;
	}
	if (stdin_data)
		(void)channel_write_all(ch, stdin_data, strlen(stdin_data));
	while (data_fd >= 0 && (n = read(data_fd, chunk, sizeof(chunk))) > 0)
		if (channel_write_all(ch, chunk, (size_t)n)) {
			(void)buf_adds(err,
				       "copying the agent over SSH failed");
			libssh2_channel_free(ch);
			return ERR_IO;
		}
	libssh2_channel_send_eof(ch);
	while ((n = libssh2_channel_read(ch, chunk, sizeof(chunk))) > 0)
		if (out)
			(void)buf_add(out, chunk, (size_t)n);
	while (libssh2_channel_read_stderr(ch, chunk, sizeof(chunk)) > 0)
		;
	libssh2_channel_close(ch);
	libssh2_channel_wait_closed(ch);
	*status = libssh2_channel_get_exit_status(ch);
	libssh2_channel_free(ch);
	return 0;
}

/* Copies the agent binary to tmp_path on the host (scp). */
static int copy_agent(LIBSSH2_SESSION *s, const struct prov_job *j,
		      const char *tmp_path, struct buf *err)
{
	LIBSSH2_CHANNEL *ch;
	struct stat st;
	char chunk[65536];
	ssize_t n;
	int fd = open(j->ctx->cfg.agent_binary, O_RDONLY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0 || fstat(fd, &st)) {
		(void)buf_addf(err, "cannot read '%s'",
			       j->ctx->cfg.agent_binary);
		if (fd >= 0)
			close(fd);
		return ERR_IO;
	}
	ch = libssh2_scp_send64(s, tmp_path, 0755, st.st_size, 0, 0);
	if (!ch) {
		(void)buf_addf(err, "cannot copy the agent to '%s'", tmp_path);
		close(fd);
		return ERR_IO;
	}
	while (!ret && (n = read(fd, chunk, sizeof(chunk))) > 0)
		if (channel_write_all(ch, chunk, (size_t)n)) {
			(void)buf_adds(err, "copying the agent failed");
			ret = ERR_IO;
		}
	libssh2_channel_send_eof(ch);
	libssh2_channel_wait_eof(ch);
	libssh2_channel_wait_closed(ch);
	libssh2_channel_free(ch);
	close(fd);
	return ret;
}

/* Exit statuses of the start script when the host lacks this agent build. */
#define AGENT_MISSING 3
#define AGENT_OTHER 4

/*
 * One round trip: store the token (it travels on the channel's stdin into
 * a file only the agent's user can read, never on a command line), put a
 * just-copied binary in place, check the binary's hash, stop an agent left
 * from before and start ours detached. Exits AGENT_MISSING or AGENT_OTHER,
 * starting nothing, when the host lacks this build. An agent that runs
 * already with this build, token and controller is left alone (exit 0):
 * it was only cut off (a partition that healed while this connection was
 * being made) and comes back by itself; stopping it would stop its work.
 */
static void start_script(const struct prov_job *j, const char *tmp_path,
			 int inline_copy, struct buf *cmd)
{
	const char *w = j->work_dir;

	buf_reset(cmd);
	if (inline_copy)
		/* The token's line, then the binary, on the same stdin: the
		 * shell's read takes exactly one line. */
		(void)buf_addf(cmd,
			       "umask 077; mkdir -p '%s' && IFS= read -r t && "
			       "printf '%%s\\n' \"$t\" > '%s/token.new' && "
			       "cat > '%s' && chmod 755 '%s' || exit 1; ",
			       w, w, tmp_path, tmp_path);
	else
		(void)buf_addf(cmd,
			       "umask 077; mkdir -p '%s' && cat > "
			       "'%s/token.new' || exit 1; ",
			       w, w);
	/*
	 * Hosts that share a file system may all copy at once: a copy that
	 * finds the right build already in place is dropped, so a running
	 * agent's binary is replaced only when it differs.
	 */
	if (tmp_path)
		(void)buf_addf(cmd,
			       "if [ \"$(sha256sum '%s' 2>/dev/null | "
			       "cut -c1-64)\" = '%s' ]; then rm -f '%s'; "
			       "else mv -f '%s' '%s' || exit 1; fi; ",
			       j->agent_path, j->ctx->agent_sha256, tmp_path,
			       tmp_path, j->agent_path);
	(void)buf_addf(cmd,
		       "[ -f '%s' ] || exit %d; "
		       "[ \"$(sha256sum '%s' 2>/dev/null | cut -c1-64)\" = "
		       "'%s' ] || exit %d; ",
		       j->agent_path, AGENT_MISSING, j->agent_path,
		       j->ctx->agent_sha256, AGENT_OTHER);
	(void)buf_addf(cmd,
		       "p=$(cat '%s/agent.pid' 2>/dev/null); "
		       "if [ -n \"$p\" ] && kill -0 \"$p\" 2>/dev/null; then "
		       "if cmp -s '%s/token.new' '%s/token' && "
		       "[ \"$(sha256sum /proc/$p/exe 2>/dev/null | "
		       "cut -c1-64)\" = '%s' ] && "
		       "tr '\\000' ' ' < /proc/$p/cmdline | "
		       "grep -qF -- '--controller %s '; then "
		       "rm -f '%s/token.new'; echo kept; exit 0; fi; "
		       "kill \"$p\"; sleep 0.2; fi; ",
		       w, w, w, j->ctx->agent_sha256,
		       j->ctx->cfg.agent_controllers, w);
	/*
	 * The folder is searchable (the jobs' users reach their folders
	 * below it), the token stays 0600. The controller's CA is pinned
	 * here, from the controller's own copy: no trust on first use.
	 */
	(void)buf_addf(cmd, "chmod 711 '%s' || exit 1; ", w);
	if (j->ctx->tls_ca_pem)
		(void)buf_addf(cmd,
			       "printf '%%s' '%s' > '%s/ca.pem.new' && "
			       "chmod 644 '%s/ca.pem.new' && "
			       "mv -f '%s/ca.pem.new' '%s/ca.pem' || exit 1; ",
			       j->ctx->tls_ca_pem, w, w, w, w);
	(void)buf_addf(cmd,
		       "mv -f '%s/token.new' '%s/token' || exit 1; "
		       "setsid '%s' --controller '%s' --host '%s' "
		       "--work-dir '%s' --address '%s' --token-stdin%s%s%s "
		       "< '%s/token' >> '%s/agent.log' 2>&1 & "
		       "echo $! > '%s/agent.pid'",
		       w, w, j->agent_path, j->ctx->cfg.agent_controllers,
		       j->name, w, j->address,
		       j->ctx->tls_ca_pem ? " --ca-file '" : "",
		       j->ctx->tls_ca_pem ? w : "",
		       j->ctx->tls_ca_pem ? "/ca.pem'" : "", w, w, w);
}

/*
 * <state-dir>/hosts/<name>/agent.sha256: the build this controller last
 * started on the host, so that a later provisioning (after a restart of
 * either side) first tries to start what is there without copying.
 */
static void agent_sha_path(const struct prov_job *j, struct buf *b)
{
	(void)buf_addf(b, "%s/hosts/%s/agent.sha256", j->ctx->cfg.state_dir,
		       j->name);
}

static int agent_known(const struct prov_job *j)
{
	struct buf p = BUF_INIT;
	char *line;
	int known;

	agent_sha_path(j, &p);
	line = ctrl_read_line(p.data);
	known = line && !strcmp(line, j->ctx->agent_sha256);
	free(line);
	buf_release(&p);
	return known;
}

static void agent_remember(const struct prov_job *j)
{
	struct buf p = BUF_INIT;

	agent_sha_path(j, &p);
	if (ctrl_write_small(p.data, j->ctx->agent_sha256))
		log_warn("host '%s': cannot write %s", j->name, p.data);
	buf_release(&p);
}

/*
 * Whether the decision to start an agent on j's host still holds: the
 * host is still without a live agent and its agent was not heard from
 * since the decision. Checked again just before each run of the start
 * script, as late as the controller can: connecting may take seconds, and
 * a partition that heals meanwhile brings the old agent back, which must
 * keep what it runs. What is left (the script's round trip) is covered by
 * the script itself: it leaves an agent of this build, token and
 * controller alone.
 */
static int still_wanted(const struct prov_job *j)
{
	struct ctrl_ctx *ctx = j->ctx;
	struct ctrl_host *h;
	int want;

	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, j->name);
	want = h && !h->removed && (!h->registered || h->lost) &&
	       h->last_seen_ms == j->seen_ms;
	pthread_mutex_unlock(&ctx->hosts_lock);
	return want;
}

/* What provision() found instead of starting an agent. */
#define PROV_HEARD 1 /* the agent was heard from since the decision */
#define PROV_KEPT 2  /* the host runs an agent of this build and token */

/*
 * An SSH session with j's host on the connected socket fd: handshake,
 * host key checked, logged in with j's key. Returns 0 or an error with
 * err; *out is the session either way (the caller frees it).
 */
static int ssh_open(const struct prov_job *j, int fd, LIBSSH2_SESSION **out,
		    struct buf *err)
{
	LIBSSH2_SESSION *s = libssh2_session_init();
	struct buf pub = BUF_INIT;
	int ret;

	*out = s;
	libssh2_session_set_timeout(s, SSH_TIMEOUT_MS);
	/* The fastest key exchange both sides know: curve25519 costs about a
	 * third less than the default. */
	libssh2_session_method_pref(s, LIBSSH2_METHOD_KEX,
				    "curve25519-sha256,curve25519-sha256@"
				    "libssh.org,ecdh-sha2-nistp256,"
				    "diffie-hellman-group14-sha256,"
				    "diffie-hellman-group14-sha1");
	if (libssh2_session_handshake(s, fd)) {
		(void)buf_addf(err, "SSH handshake with %s:%d failed",
			       j->address, j->port);
		return ERR_IO;
	}
	ret = check_host_key(s, j, err);
	if (ret)
		return ret;
	(void)buf_addf(&pub, "%s.pub", j->key);
	if (libssh2_userauth_publickey_fromfile(s, j->user, pub.data, j->key,
						NULL)) {
		char *msg = NULL;

		libssh2_session_last_error(s, &msg, NULL, 0);
		(void)buf_addf(err,
			       "authentication as '%s' refused (key '%s'): "
			       "%s",
			       j->user, j->key, msg ? msg : "");
		ret = ERR_AUTH;
	}
	buf_release(&pub);
	return ret;
}

/*
 * Runs the start script on s with tok on its stdin, copying the agent
 * first or along when the host does not hold this build. Returns 0 (the
 * script's exit status in *status, its output in out) or an error with
 * err; *back is PROV_HEARD when the agent was heard from meanwhile and
 * nothing was started.
 */
static int start_agent(LIBSSH2_SESSION *s, const struct prov_job *j,
		       const char *tok, struct buf *out, int *status, int *back,
		       struct buf *err)
{
	struct buf cmd = BUF_INIT;
	struct buf tmp = BUF_INIT;
	int ret;

	if (!agent_known(j)) {
		/*
		 * A host not known to hold this build (first contact, or the
		 * controller changed): the binary travels with the start
		 * script, one round trip instead of three.
		 */
		int bfd = open(j->ctx->cfg.agent_binary, O_RDONLY | O_CLOEXEC);

		if (bfd < 0) {
			(void)buf_addf(err, "cannot read '%s'",
				       j->ctx->cfg.agent_binary);
			return ERR_IO;
		}
		log_info("host '%s': copying the agent (with the start "
			 "script: not known to hold this build)",
			 j->name);
		(void)buf_addf(&tmp, "%s.tmp.%s.%ld", j->agent_path, j->name,
			       (long)time_mono_us());
		start_script(j, tmp.data, 1, &cmd);
		ret = run_cmd(s, cmd.data, tok, bfd, out, status, err);
		close(bfd);
	} else {
		start_script(j, NULL, 0, &cmd);
		ret = run_cmd(s, cmd.data, tok, -1, out, status, err);
	}
	if (!ret && (*status == AGENT_MISSING || *status == AGENT_OTHER)) {
		/* Hosts may share a filesystem: each copies to its own temp
		 * name, so parallel copies never meet half-written. */
		log_info("host '%s': copying the agent (%s)", j->name,
			 *status == AGENT_MISSING ? "missing" :
						    "a different build");
		buf_reset(&tmp);
		(void)buf_addf(&tmp, "%s.tmp.%s.%ld", j->agent_path, j->name,
			       (long)time_mono_us());
		ret = copy_agent(s, j, tmp.data, err);
		if (!ret && !still_wanted(j)) {
			buf_reset(&cmd);
			(void)buf_addf(&cmd, "rm -f '%s'", tmp.data);
			(void)run_cmd(s, cmd.data, NULL, -1, NULL, status, err);
			buf_reset(err);
			*back = PROV_HEARD;
		} else if (!ret) {
			start_script(j, tmp.data, 0, &cmd);
			ret = run_cmd(s, cmd.data, tok, -1, out, status, err);
		}
	}
	buf_release(&tmp);
	buf_release(&cmd);
	return ret;
}

/*
 * Starts the agent on j's host. Returns 0 or an error with err; *back is
 * PROV_HEARD or PROV_KEPT when nothing was started because the host's
 * agent is back, else 0.
 */
static int provision(const struct prov_job *j, int *back, struct buf *err)
{
	LIBSSH2_SESSION *s = NULL;
	struct buf out = BUF_INIT_MAX(4096);
	struct buf tok = BUF_INIT;
	int status = 0;
	int ret;
	int fd = tcp_connect(j->address, j->port, err);

	*back = 0;
	if (fd < 0)
		return ERR_IO;
	ret = ssh_open(j, fd, &s, err);
	if (ret)
		goto out;
	/*
	 * The token's line on the script's stdin, the same in every path:
	 * the script compares it byte for byte with the running agent's.
	 */
	(void)buf_addf(&tok, "%s\n", j->token);
	if (!still_wanted(j)) {
		*back = PROV_HEARD;
		goto out;
	}
	ret = start_agent(s, j, tok.data, &out, &status, back, err);
	if (ret || *back)
		goto out;
	if (status == AGENT_MISSING || status == AGENT_OTHER) {
		(void)buf_addf(err,
			       "the agent copied to '%s' does not match "
			       "this build",
			       j->agent_path);
		ret = ERR_IO;
	} else if (status) {
		(void)buf_addf(err, "starting the agent failed (exit %d)",
			       status);
		ret = ERR_IO;
	} else {
		agent_remember(j);
		if (out.len >= 4 && !memcmp(out.data, "kept", 4))
			*back = PROV_KEPT;
	}
out:
	buf_release(&tok);
	libssh2_session_disconnect(s, "bye");
	libssh2_session_free(s);
	close(fd);
	buf_release(&out);
	return ret;
}

static void job_free(struct prov_job *j)
{
	free(j->name);
	free(j->address);
	free(j->user);
	free(j->key);
	free(j->known_hosts);
	free(j->agent_path);
	free(j->work_dir);
	free(j->token);
	free(j);
}

static void *worker(void *arg)
{
	struct prov_job *j = arg;
	struct ctrl_ctx *ctx = j->ctx;
	struct buf err = BUF_INIT;
	int64_t t0 = time_mono_ms();
	int back = 0;
	int ret = provision(j, &back, &err);
	struct ctrl_host *h;

	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, j->name);
	if (h) {
		h->prov_busy = 0;
		free(h->prov_error);
		h->prov_error = ret ? xstrdup(err.data) : NULL;
		if (ret) {
			h->prov_backoff_ms = h->prov_backoff_ms ?
						     h->prov_backoff_ms * 2 :
						     BACKOFF_MIN_MS;
			if (h->prov_backoff_ms > BACKOFF_MAX_MS)
				h->prov_backoff_ms = BACKOFF_MAX_MS;
		} else {
			/* Give the agent time to register before trying
			 * again. */
			h->prov_backoff_ms = 0;
		}
		/* An agent that is back and lost again is provisioned at
		 * once. */
		h->next_provision_ms =
			time_mono_ms() + (ret ? h->prov_backoff_ms :
					  back == PROV_HEARD ?
						0 :
						2 * ctx->cfg.host_deadline_ms);
	}
	ctx->prov_running--;
	pthread_cond_broadcast(&ctx->prov_done);
	pthread_mutex_unlock(&ctx->hosts_lock);
	if (ret)
		log_warn("host '%s': provisioning failed: %s", j->name,
			 err.data);
	else if (back == PROV_HEARD)
		log_info("host '%s': its agent is back (heard from after "
			 "provisioning was decided): nothing started",
			 j->name);
	else if (back == PROV_KEPT)
		log_info("host '%s': its agent runs (this build, token and "
			 "controller): left running",
			 j->name);
	else
		log_info("host '%s': agent started over SSH (%lld ms)", j->name,
			 (long long)(time_mono_ms() - t0));
	buf_release(&err);
	job_free(j);
	return NULL;
}

void ctrl_provision_tick(struct ctrl_ctx *ctx)
{
	int64_t now = time_mono_ms();
	size_t i;

	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts && !ctx->stopping; i++) {
		struct ctrl_host *h = ctx->hosts[i];
		struct prov_job *j;
		pthread_t t;
		pthread_attr_t attr;

		if (!h->inventory || h->external || h->removed ||
		    h->prov_busy || (h->registered && !h->lost) ||
		    now < h->next_provision_ms)
			continue;
		j = xcalloc(1, sizeof(*j));
		j->ctx = ctx;
		j->name = xstrdup(h->name);
		j->address = xstrdup(h->inv_address);
		j->port = h->ssh_port;
		j->user = xstrdup(h->ssh_user);
		j->key = xstrdup(h->ssh_key);
		j->known_hosts = xstrdup(h->known_hosts);
		j->accept_new = h->accept_new_host_key;
		j->agent_path = xstrdup(h->agent_path);
		j->work_dir = xstrdup(h->work_dir);
		j->token = xstrdup(h->token);
		j->seen_ms = h->last_seen_ms;
		log_info("host '%s': provisioning: %s", h->name,
			 h->registered ? "its agent is lost" :
					 "no agent registered yet");
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &attr, worker, j)) {
			job_free(j);
		} else {
			h->prov_busy = 1;
			ctx->prov_running++;
		}
		pthread_attr_destroy(&attr);
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
}

void ctrl_provision_stop(struct ctrl_ctx *ctx)
{
	pthread_mutex_lock(&ctx->hosts_lock);
	while (ctx->prov_running > 0)
		pthread_cond_wait(&ctx->prov_done, &ctx->hosts_lock);
	pthread_mutex_unlock(&ctx->hosts_lock);
}
