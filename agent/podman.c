/*
 * Ranks as containers (docs/containers.md): podman, rootful and
 * daemonless, with this host's own image store under the work directory.
 *
 *   pull   in the staging worker, as root: once per digest per host (a
 *          lock file per digest makes concurrent jobs share one pull;
 *          an image already there is not asked for again);
 *   run    each rank is `podman run --rm` in the rank's process group:
 *          --network host (the host's addresses, as a process), host IPC
 *          (/dev/shm for data loaders), --init (a reaper as PID 1), the
 *          job folder bound at /opt/ml, the job's user, the rank's
 *          environment by name, the log driver passthrough (the
 *          container writes straight into the rank's pipes);
 *   end    SIGTERM to the group reaches the container through podman's
 *          signal proxy; once podman is gone (SIGKILL, fencing) the
 *          keeper kills the container's init (its PID namespace goes
 *          with it) and removes the container (proc.c).
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "agent/assignment.h"
#include "agent/config.h"
#include "agent/jobdir.h"
#include "agent/podman.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/spawn.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define CGROUP2_MAGIC 0x63677270
#define PULL_TIMEOUT_MS (30 * 60 * 1000)
#define QUICK_TIMEOUT_MS (60 * 1000)
#define OUT_MAX (64u << 10)

static const char *podman_bin(void)
{
	const char *p = getenv("TRAINAGENT_PODMAN");

	return p && *p ? p : "podman";
}

/*
 * crun refuses a cgroup v1 host whose v2 hierarchy holds controllers
 * ("hybrid mode"); runc runs there. Elsewhere podman's own choice.
 */
static const char *oci_runtime(void)
{
	static int done;
	static const char *rt;
	const char *env = getenv("TRAINAGENT_OCI_RUNTIME");
	struct statfs sf;
	char buf[256] = "";
	int fd;

	if (env && *env)
		return env;
	if (done)
		return rt;
	done = 1;
	if (!statfs("/sys/fs/cgroup", &sf) && sf.f_type == CGROUP2_MAGIC)
		return rt;
	fd = open("/sys/fs/cgroup/unified/cgroup.controllers",
		  O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);

		buf[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	if (buf[0] && buf[0] != '\n' &&
	    (!access("/usr/bin/runc", X_OK) || !access("/usr/sbin/runc", X_OK)))
		rt = "runc";
	return rt;
}

/*
 * podman refuses a runroot (its state while containers run) longer than
 * 50 bytes. A deep work directory gets one under /run named by a hash of
 * this host's name and the work directory: unique to the host (hosts
 * that share /run, such as the test cluster's, have their own names) and
 * the same for every agent that serves that directory.
 */
static void runroot(const char *work_dir, struct buf *out)
{
	unsigned char md[32];
	char host[256] = "", hex[17];
	struct buf key = BUF_INIT;
	unsigned int n = 0;
	int i;

	(void)buf_addf(out, "%s/containers/run", work_dir);
	if (out->len <= 50)
		return;
	(void)gethostname(host, sizeof(host) - 1);
	(void)buf_addf(&key, "%s\n%s", host, work_dir);
	(void)EVP_Digest(key.data, key.len, md, &n, EVP_sha256(), NULL);
	for (i = 0; i < 8; i++)
		(void)snprintf(hex + 2 * i, 3, "%02x", md[i]);
	buf_reset(out);
	(void)buf_addf(out, "%s/trainagent-%s",
		       access("/run", W_OK) ? "/tmp" : "/run", hex);
	buf_release(&key);
}

void agent_podman_base(const char *work_dir, struct strvec *argv)
{
	const char *rt = oci_runtime();
	struct buf run = BUF_INIT;

	runroot(work_dir, &run);
	strvec_push(argv, podman_bin());
	strvec_push(argv, "--root");
	strvec_pushf(argv, "%s/containers/storage", work_dir);
	strvec_push(argv, "--runroot");
	strvec_push(argv, run.data);
	buf_release(&run);
	strvec_push(argv, "--tmpdir");
	strvec_pushf(argv, "%s/containers/tmp", work_dir);
	strvec_push(argv, "--cgroup-manager");
	strvec_push(argv, "cgroupfs");
	strvec_push(argv, "--events-backend");
	strvec_push(argv, "file");
	if (rt) {
		strvec_push(argv, "--runtime");
		strvec_push(argv, rt);
	}
}

char *agent_podman_name(const struct agent_assign *a, int rank)
{
	struct buf b = BUF_INIT;

	(void)buf_addf(&b, "tc-%s-%.8s-%d-%s-%d", a->job,
		       a->job_uid ? a->job_uid : "0", a->attempt, a->algo,
		       rank);
	return buf_detach(&b, NULL);
}

/* --- pulling ------------------------------------------------------------- */

int agent_podman_run(const char *work_dir, const char *const *args,
		     int64_t timeout_ms, size_t max_out,
		     struct spawn_result *res)
{
	struct strvec argv = STRVEC_INIT;
	int ret;

	agent_podman_base(work_dir, &argv);
	for (; *args; args++)
		strvec_push(&argv, *args);
	ret = spawn_capture(argv.v, NULL, timeout_ms, max_out, res);
	strvec_release(&argv);
	return ret;
}

/*
 * Whether the store's image list (containers/storage's
 * <driver>-images/images.json) names image: a file read instead of a
 * podman run on every launch. -1 when there is no such list to read.
 */
int agent_podman_has_image(const char *work_dir, const char *image)
{
	struct buf pat = BUF_INIT;
	glob_t g;
	size_t i, j, k;
	int found = -1;

	(void)buf_addf(&pat, "%s/containers/storage/*-images/images.json",
		       work_dir);
	if (glob(pat.data, 0, NULL, &g)) {
		buf_release(&pat);
		return -1;
	}
	for (i = 0; i < g.gl_pathc && found != 1; i++) {
		json_t *root = json_load_file(g.gl_pathv[i], 0, NULL), *e;

		if (!json_is_array(root)) {
			json_decref(root);
			continue;
		}
		found = 0;
		json_array_foreach(root, j, e)
		{
			json_t *names = json_object_get(e, "names"), *n;

			json_array_foreach(names, k,
					   n) if (json_is_string(n) &&
						  !strcmp(json_string_value(n),
							  image)) found = 1;
		}
		json_decref(root);
	}
	globfree(&g);
	buf_release(&pat);
	return found;
}

static int image_present(const char *work_dir, const char *image)
{
	const char *args[] = { "image", "exists", image, NULL };
	struct spawn_result res = SPAWN_RESULT_INIT;
	int ok = !agent_podman_run(work_dir, args, QUICK_TIMEOUT_MS, OUT_MAX,
				   &res) &&
		 spawn_ok(&res);

	spawn_result_release(&res);
	return ok;
}

/* The auth.json a pull reads: 0600, in the job's own agent folder. */
static char *write_auth(const char *dir, const char *auth, struct buf *err)
{
	struct buf path = BUF_INIT;
	int fd;

	(void)buf_addf(&path, "%s/.trainagent/registry-auth.json", dir);
	fd = open(path.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || fs_write_all(fd, auth, strlen(auth))) {
		(void)buf_addf(err, "cannot write %s: %s", path.data,
			       strerror(errno));
		if (fd >= 0)
			close(fd);
		buf_release(&path);
		return NULL;
	}
	close(fd);
	return buf_detach(&path, NULL);
}

/* podman's error line without its "Error: " and log prefixes. */
static void pull_error(const struct spawn_result *res, struct buf *out)
{
	struct buf line = BUF_INIT;
	const char *s;

	spawn_last_line(res, &line);
	s = line.data;
	if (!strncmp(s, "Error: ", 7))
		s += 7;
	(void)buf_adds(out, s);
	buf_release(&line);
}

int agent_podman_pull(const char *work_dir, const char *dir,
		      const struct api_assignment *s, int *pulled,
		      struct buf *err)
{
	struct spawn_result res = SPAWN_RESULT_INIT;
	struct buf lock = BUF_INIT, tls = BUF_INIT;
	const char *at = strrchr(s->image, '@');
	const char *args[10];
	char *auth = NULL;
	int fd, ret = 0, k = 0;

	*pulled = 0;
	/* The common case, an image this host has: no lock, no podman. */
	if (agent_podman_has_image(work_dir, s->image) == 1)
		return 0;
	(void)buf_addf(&lock, "%s/containers", work_dir);
	if (fs_mkdir_p(lock.data, 0700, err))
		goto out_err;
	/* One lock per digest: a second job waits for the first pull and
	 * then finds the image there. */
	(void)buf_addf(&lock, "/pull-%s.lock", at ? at + 1 : "tag");
	fd = open(lock.data, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX)) {
		(void)buf_addf(err, "cannot lock %s: %s", lock.data,
			       strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out_err;
	}
	if (image_present(work_dir, s->image)) {
		close(fd);
		goto out;
	}
	args[k++] = "pull";
	args[k++] = "--quiet";
	(void)buf_addf(&tls, "--tls-verify=%s",
		       s->tls_verify ? "true" : "false");
	args[k++] = tls.data;
	/* Only what the controller hands over, never a file the host
	 * happens to hold. */
	auth = write_auth(
		dir, s->registry_auth ? s->registry_auth : "{\"auths\":{}}",
		err);
	if (!auth) {
		close(fd);
		goto out_err;
	}
	args[k++] = "--authfile";
	args[k++] = auth;
	args[k++] = s->image;
	args[k] = NULL;
	ret = agent_podman_run(work_dir, args, PULL_TIMEOUT_MS, OUT_MAX, &res);
	if (auth)
		(void)unlink(auth);
	close(fd);
	if (!ret && !spawn_ok(&res)) {
		(void)buf_addf(err, "cannot pull image '%s': ", s->image);
		pull_error(&res, err);
		ret = ERR_IO;
	} else if (ret) {
		(void)buf_addf(err, "cannot run podman: %s", res.err.data);
	} else {
		*pulled = 1;
	}
	goto out;
out_err:
	ret = ERR_IO;
out:
	spawn_result_release(&res);
	buf_release(&lock);
	buf_release(&tls);
	free(auth);
	return ret;
}

/* --- running ------------------------------------------------------------- */

/* Whether this process holds CAP_SYS_RESOURCE (bit 24 of CapEff). */
static int can_raise_limits(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long eff = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	if (f)
		fclose(f);
	return (eff >> 24) & 1;
}

/*
 * podman gives containers 1048576 open files and processes, which needs
 * CAP_SYS_RESOURCE; without it, this host's own limits (podman lowers its
 * own RLIMIT_NPROC to 32768, and the runtime cannot give more than it
 * holds).
 */
static void ulimits(struct strvec *argv)
{
	struct rlimit nofile, nproc;

	if (can_raise_limits() || getrlimit(RLIMIT_NOFILE, &nofile) ||
	    getrlimit(RLIMIT_NPROC, &nproc))
		return;
	if (nproc.rlim_max > 32768)
		nproc.rlim_max = 32768;
	if (nproc.rlim_cur > nproc.rlim_max)
		nproc.rlim_cur = nproc.rlim_max;
	strvec_push(argv, "--ulimit");
	strvec_pushf(argv, "nofile=%llu:%llu",
		     (unsigned long long)nofile.rlim_cur,
		     (unsigned long long)nofile.rlim_max);
	strvec_push(argv, "--ulimit");
	strvec_pushf(argv, "nproc=%llu:%llu",
		     (unsigned long long)nproc.rlim_cur,
		     (unsigned long long)nproc.rlim_max);
}

/* A CDI spec naming nvidia.com/gpu, in the two places podman reads. */
static int have_cdi_gpus(void)
{
	static const char *const pats[] = { "/etc/cdi/*", "/var/run/cdi/*" };
	size_t i, j;
	int found = 0;

	for (i = 0; i < 2 && !found; i++) {
		glob_t g;

		if (glob(pats[i], 0, NULL, &g))
			continue;
		for (j = 0; j < g.gl_pathc && !found; j++) {
			FILE *f = fopen(g.gl_pathv[j], "re");
			char line[512];

			while (f && !found && fgets(line, sizeof(line), f))
				found = strstr(line, "nvidia.com/gpu") != NULL;
			if (f)
				fclose(f);
		}
		globfree(&g);
	}
	return found;
}

/* The host's GPUs: the CDI device when a spec names it, else the nodes. */
static void gpus(struct strvec *argv)
{
	glob_t g;
	size_t i;

	if (have_cdi_gpus()) {
		strvec_push(argv, "--device");
		strvec_push(argv, "nvidia.com/gpu=all");
		return;
	}
	if (glob("/dev/nvidia*", 0, NULL, &g))
		return;
	for (i = 0; i < g.gl_pathc; i++) {
		struct stat st;

		if (stat(g.gl_pathv[i], &st) || !S_ISCHR(st.st_mode))
			continue;
		strvec_push(argv, "--device");
		strvec_push(argv, g.gl_pathv[i]);
	}
	globfree(&g);
}

/* Variables of the podman process itself, not handed to the image. */
static int host_only(const char *entry)
{
	static const char *const names[] = { "PATH=", "HOME=", "USER=",
					     "LANG=" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (!strncmp(entry, names[i], strlen(names[i])))
			return 1;
	return 0;
}

void agent_podman_run_argv(const struct agent_config *cfg,
			   const struct agent_assign *a, int rank,
			   const struct strvec *env, const char *ca_file,
			   struct strvec *argv)
{
	const struct api_assignment *s = &a->spec;
	char *name = agent_podman_name(a, rank);
	char *pidfile = agent_fifo_path(a->dir, rank, "cpid");
	size_t i;
	int g;

	agent_podman_base(cfg->work_dir, argv);
	strvec_push(argv, "run");
	strvec_push(argv, "--rm");
	strvec_push(argv, "--name");
	strvec_push(argv, name);
	strvec_push(argv, "--pull");
	strvec_push(argv, "never");
	strvec_push(argv, "--network");
	/* Isolated (one host): no network at all, not even the host's. */
	strvec_push(argv, s->network_isolation ? "none" : "host");
	strvec_push(argv, "--ipc");
	strvec_push(argv, "host");
	strvec_push(argv, "--init");
	strvec_push(argv, "--log-driver");
	strvec_push(argv, "passthrough");
	strvec_push(argv, "--pids-limit");
	strvec_push(argv, "-1");
	strvec_push(argv, "--pidfile");
	strvec_push(argv, pidfile);
	strvec_push(argv, "--mount");
	strvec_pushf(argv, "type=bind,src=%s,dst=/opt/ml", a->dir);
	if (ca_file) {
		strvec_push(argv, "--mount");
		strvec_pushf(argv, "type=bind,src=%s,dst=%s,ro", ca_file,
			     ca_file);
	}
	ulimits(argv);
	if (cfg->gpus > 0)
		gpus(argv);
	if (a->ident.set) {
		strvec_push(argv, "--user");
		strvec_pushf(argv, "%u:%u", (unsigned)a->ident.uid,
			     (unsigned)a->ident.gid);
		for (g = 0; g < a->ident.n_groups; g++) {
			strvec_push(argv, "--group-add");
			strvec_pushf(argv, "%u", (unsigned)a->ident.groups[g]);
		}
	}
	/* By name: podman takes the value from its own environment, so no
	 * value (the rendezvous token least of all) shows in ps. */
	for (i = 0; i < env->n; i++) {
		const char *eq = strchr(env->v[i], '=');

		if (!eq || host_only(env->v[i]))
			continue;
		strvec_push(argv, "--env");
		strvec_pushf(argv, "%.*s", (int)(eq - env->v[i]), env->v[i]);
	}
	if (s->entrypoint) {
		struct buf j = BUF_INIT;

		/* podman takes a JSON array for an entry point of several
		 * words. */
		(void)buf_adds(&j, "[");
		for (i = 0; s->entrypoint[i]; i++) {
			const char *c;

			(void)buf_adds(&j, i ? ",\"" : "\"");
			for (c = s->entrypoint[i]; *c; c++)
				if (*c == '"' || *c == '\\')
					(void)buf_addf(&j, "\\%c", *c);
				else if ((unsigned char)*c < 0x20)
					(void)buf_addf(&j, "\\u%04x",
						       (unsigned char)*c);
				else
					(void)buf_add(&j, c, 1);
			(void)buf_adds(&j, "\"");
		}
		(void)buf_adds(&j, "]");
		strvec_push(argv, "--entrypoint");
		strvec_push(argv, j.data);
		buf_release(&j);
	}
	strvec_push(argv, s->image);
	for (i = 0; s->argv && s->argv[i]; i++)
		strvec_push(argv, s->argv[i]);
	free(name);
	free(pidfile);
}

void agent_podman_cleanup_argv(const struct agent_config *cfg,
			       const struct agent_assign *a, int rank,
			       struct strvec *argv)
{
	char *name = agent_podman_name(a, rank);

	agent_podman_base(cfg->work_dir, argv);
	strvec_push(argv, "rm");
	strvec_push(argv, "--force");
	strvec_push(argv, "--ignore");
	strvec_push(argv, "--time");
	strvec_push(argv, "0");
	strvec_push(argv, name);
	free(name);
}
