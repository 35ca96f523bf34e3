/*
 * Tests agent/proc.c and agent/lines.c: starting real processes, capturing
 * their stdout/stderr as lines (partial last line, a 200 KiB line, invalid
 * UTF-8), exit codes and signals, killing a whole process group (a
 * grandchild included), a program that ignores SIGTERM, exec failures and
 * the exact environment.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/lines.h"
#include "agent/proc.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/timeutil.h"

struct capture {
	struct strvec out;
	struct strvec err;
	struct agent_lines out_lines;
	struct agent_lines err_lines;
};

static void capture_init(struct capture *c)
{
	memset(c, 0, sizeof(*c));
	agent_lines_init(&c->out_lines, 0);
	agent_lines_init(&c->err_lines, 0);
}

static void capture_release(struct capture *c)
{
	strvec_release(&c->out);
	strvec_release(&c->err);
	agent_lines_release(&c->out_lines);
	agent_lines_release(&c->err_lines);
}

static void on_line(void *arg, const char *line, size_t len)
{
	struct strvec *v = arg;

	assert_int_equal(strlen(line), len);
	strvec_push(v, line);
}

/*
 * Reads both pipes until stop_after lines arrived on stdout (0: until both
 * reach EOF) or timeout_ms passed. Returns 1 when both pipes are closed.
 */
static int pump(struct agent_proc *p, struct capture *c, size_t stop_after,
		int timeout_ms)
{
	int64_t end = time_mono_ms() + timeout_ms;
	struct pollfd pfd[2];
	int n, r;

	while (p->out_fd >= 0 || p->err_fd >= 0) {
		if (stop_after && c->out.n >= stop_after)
			return 0;
		if (time_mono_ms() > end)
			return 0;
		n = 0;
		if (p->out_fd >= 0) {
			pfd[n].fd = p->out_fd;
			pfd[n++].events = POLLIN;
		}
		if (p->err_fd >= 0) {
			pfd[n].fd = p->err_fd;
			pfd[n++].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)n, 100) < 0 && errno != EINTR)
			fail_msg("poll: %s", strerror(errno));
		if (p->out_fd >= 0) {
			r = agent_lines_read(&c->out_lines, p->out_fd, on_line,
					     &c->out);
			assert_true(r >= 0);
			if (r == 1) {
				close(p->out_fd);
				p->out_fd = -1;
			}
		}
		if (p->err_fd >= 0) {
			r = agent_lines_read(&c->err_lines, p->err_fd, on_line,
					     &c->err);
			assert_true(r >= 0);
			if (r == 1) {
				close(p->err_fd);
				p->err_fd = -1;
			}
		}
	}
	return 1;
}

static void setup_sh(struct agent_proc *p, const char *script)
{
	agent_proc_init(p);
	strvec_push(&p->args, "/bin/sh");
	strvec_push(&p->args, "-c");
	strvec_push(&p->args, script);
	strvec_push(&p->env, "PATH=/usr/bin:/bin");
}

static void start_ok(struct agent_proc *p)
{
	struct buf err = BUF_INIT;

	if (agent_proc_start(p, &err))
		fail_msg("agent_proc_start: %s", err.data);
	assert_true(p->pid > 0);
	assert_int_equal(p->start_errno, 0);
	assert_true(p->started_ms > 0);
	buf_release(&err);
}

static void test_lines_and_partial(void **state)
{
	struct agent_proc p;
	struct capture c;

	(void)state;
	capture_init(&c);
	setup_sh(&p, "echo out1; echo err1 >&2; echo; echo out2; "
		     "printf partial");
	start_ok(&p);
	assert_int_equal(pump(&p, &c, 0, 5000), 1);
	agent_proc_wait(&p);
	assert_true(p.exited);
	assert_int_equal(p.exit_code, 0);
	assert_int_equal(p.term_signal, 0);
	assert_int_equal(c.out.n, 4);
	assert_string_equal(c.out.v[0], "out1");
	assert_string_equal(c.out.v[1], "");
	assert_string_equal(c.out.v[2], "out2");
	assert_string_equal(c.out.v[3], "partial");
	assert_int_equal(c.err.n, 1);
	assert_string_equal(c.err.v[0], "err1");
	agent_proc_release(&p);
	capture_release(&c);
}

static void test_long_line(void **state)
{
	struct agent_proc p;
	struct capture c;
	size_t i, total = 0;

	(void)state;
	capture_init(&c);
	/* 200 KiB without a newline, then "end". */
	setup_sh(&p, "head -c 204800 /dev/zero | tr '\\000' x; echo; "
		     "echo end");
	start_ok(&p);
	assert_int_equal(pump(&p, &c, 0, 10000), 1);
	agent_proc_wait(&p);
	assert_int_equal(p.exit_code, 0);
	assert_int_equal(c.out.n, 5);
	for (i = 0; i < 4; i++) {
		assert_true(strlen(c.out.v[i]) <= AGENT_LINE_MAX);
		assert_int_equal(strspn(c.out.v[i], "x"), strlen(c.out.v[i]));
		total += strlen(c.out.v[i]);
	}
	assert_int_equal(strlen(c.out.v[0]), AGENT_LINE_MAX);
	assert_int_equal(total, 204800);
	assert_string_equal(c.out.v[4], "end");
	agent_proc_release(&p);
	capture_release(&c);
}

static void test_exit_code(void **state)
{
	struct agent_proc p;
	struct capture c;

	(void)state;
	capture_init(&c);
	setup_sh(&p, "exit 3");
	start_ok(&p);
	pump(&p, &c, 0, 5000);
	agent_proc_wait(&p);
	assert_int_equal(p.exit_code, 3);
	assert_int_equal(p.term_signal, 0);
	assert_true(p.exited_ms >= p.started_ms);
	agent_proc_release(&p);
	capture_release(&c);
}

static void test_signal(void **state)
{
	struct agent_proc p;
	struct capture c;

	(void)state;
	capture_init(&c);
	setup_sh(&p, "kill -KILL $$");
	start_ok(&p);
	pump(&p, &c, 0, 5000);
	agent_proc_wait(&p);
	assert_int_equal(p.term_signal, SIGKILL);
	agent_proc_release(&p);
	capture_release(&c);
}

/* Reaps pid (a grandchild reparented to us) and returns its signal. */
static int reap_orphan(pid_t pid)
{
	int64_t end = time_mono_ms() + 5000;
	int status;
	pid_t r = 0;

	while (time_mono_ms() < end) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return WIFSIGNALED(status) ? WTERMSIG(status) : -1;
		/* ECHILD: not reparented to us yet (its parent lives). */
		if (r < 0 && errno != ECHILD)
			fail_msg("waitpid %d: %s", (int)pid, strerror(errno));
		usleep(10000);
	}
	{
		char path[64], st[256] = "";
		int e = errno;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		if (f) {
			if (!fgets(st, sizeof(st), f))
				st[0] = '\0';
			fclose(f);
		}
		fail_msg("grandchild %d not reaped in 5 s: waitpid %s; %s",
			 (int)pid, r == 0 ? "says alive" : strerror(e),
			 f ? st : "no /proc entry");
	}
	return -1;
}

static void test_group_kill(void **state)
{
	struct agent_proc p;
	struct capture c;
	pid_t bg;

	(void)state;
	capture_init(&c);
	/* The straggler is started from a subshell that exits at once, so
	 * that it is ours (the subreaper) from the start: a child of the
	 * shell itself could be reaped by the shell, which waits for its
	 * foreground sleep, when the group's SIGTERM kills it first. */
	setup_sh(&p, "(sleep 1000 & echo $!); sleep 1000");
	start_ok(&p);
	pump(&p, &c, 1, 5000);
	assert_int_equal(c.out.n, 1);
	bg = (pid_t)atoi(c.out.v[0]);
	assert_true(bg > 0);
	assert_int_equal(getpgid(bg), p.pid);
	assert_int_equal(agent_proc_signal(&p, SIGTERM), 0);
	assert_int_equal(pump(&p, &c, 0, 5000), 1);
	agent_proc_wait(&p);
	assert_int_equal(p.term_signal, SIGTERM);
	assert_int_equal(reap_orphan(bg), SIGTERM);
	agent_proc_release(&p);
	capture_release(&c);
}

static void test_stragglers_killed(void **state)
{
	struct agent_proc p;
	struct capture c;
	pid_t bg;

	(void)state;
	capture_init(&c);
	/* The leader exits at once; its background child must not stay. */
	setup_sh(&p, "sleep 1000 >/dev/null 2>&1 & echo $!; exit 0");
	start_ok(&p);
	assert_int_equal(pump(&p, &c, 0, 5000), 1);
	bg = (pid_t)atoi(c.out.v[0]);
	agent_proc_wait(&p);
	assert_int_equal(p.exit_code, 0);
	assert_int_equal(reap_orphan(bg), SIGKILL);
	agent_proc_release(&p);
	capture_release(&c);
}

static void test_sigterm_ignored(void **state)
{
	struct agent_proc p;
	struct capture c;
	int64_t t0, grace = 300;

	(void)state;
	capture_init(&c);
	setup_sh(&p, "trap '' TERM; echo ready; while :; do sleep 1; done");
	start_ok(&p);
	pump(&p, &c, 1, 5000);
	assert_string_equal(c.out.v[0], "ready");
	assert_int_equal(agent_proc_signal(&p, SIGTERM), 0);
	t0 = time_mono_ms();
	while (time_mono_ms() - t0 < grace) {
		assert_int_equal(agent_proc_reap(&p), 0);
		usleep(20000);
	}
	assert_int_equal(agent_proc_signal(&p, SIGKILL), 0);
	pump(&p, &c, 0, 5000);
	agent_proc_wait(&p);
	assert_int_equal(p.term_signal, SIGKILL);
	assert_int_equal(p.exit_code, 128 + SIGKILL);
	/* The shell's sleep died too: once its zombie is reaped (we are the
	 * subreaper here), nothing of the group is left. */
	t0 = time_mono_ms();
	while (agent_proc_signal(&p, 0) != ERR_NOTFOUND &&
	       time_mono_ms() - t0 < 5000) {
		(void)waitpid(-1, NULL, WNOHANG);
		usleep(10000);
	}
	assert_int_equal(agent_proc_signal(&p, 0), ERR_NOTFOUND);
	agent_proc_release(&p);
	capture_release(&c);
}

static void test_exec_missing(void **state)
{
	struct agent_proc p;
	struct capture c;
	struct buf err = BUF_INIT;

	(void)state;
	capture_init(&c);
	agent_proc_init(&p);
	strvec_push(&p.args, "/nonexistent/train");
	strvec_push(&p.env, "PATH=/usr/bin:/bin");
	assert_int_equal(agent_proc_start(&p, &err), 0);
	assert_int_equal(p.start_errno, ENOENT);
	assert_int_equal(pump(&p, &c, 0, 5000), 1);
	agent_proc_wait(&p);
	assert_int_equal(p.exit_code, 127);
	assert_int_equal(c.out.n, 0);
	assert_int_equal(c.err.n, 1);
	assert_non_null(strstr(c.err.v[0], "/nonexistent/train"));
	assert_non_null(strstr(c.err.v[0], strerror(ENOENT)));
	agent_proc_release(&p);
	capture_release(&c);
	buf_release(&err);
}

static void test_bad_cwd(void **state)
{
	struct agent_proc p;
	struct capture c;
	struct buf err = BUF_INIT;

	(void)state;
	capture_init(&c);
	setup_sh(&p, "echo never");
	p.cwd = strdup("/nonexistent-dir");
	assert_int_equal(agent_proc_start(&p, &err), 0);
	assert_int_equal(p.start_errno, ENOENT);
	pump(&p, &c, 0, 5000);
	agent_proc_wait(&p);
	assert_int_equal(p.exit_code, 127);
	assert_int_equal(c.out.n, 0);
	assert_non_null(strstr(c.err.v[0], "/nonexistent-dir"));
	agent_proc_release(&p);
	capture_release(&c);
	buf_release(&err);
}

static void test_env_exact(void **state)
{
	struct agent_proc p;
	struct capture c;

	(void)state;
	capture_init(&c);
	setenv("TRAINCTL_AGENT_TOKEN", "secret", 1);
	agent_proc_init(&p);
	strvec_push(&p.args, "env");
	strvec_push(&p.env, "PATH=/usr/bin:/bin");
	strvec_push(&p.env, "A=1");
	strvec_push(&p.env, "B=two words");
	agent_env_set(&p.env, "A", "one");
	p.cwd = strdup("/");
	start_ok(&p);
	pump(&p, &c, 0, 5000);
	agent_proc_wait(&p);
	assert_int_equal(p.exit_code, 0);
	assert_int_equal(c.out.n, 3);
	assert_string_equal(c.out.v[0], "PATH=/usr/bin:/bin");
	assert_string_equal(c.out.v[1], "A=one");
	assert_string_equal(c.out.v[2], "B=two words");
	assert_string_equal(agent_env_get(&p.env, "B"), "two words");
	assert_null(agent_env_get(&p.env, "C"));
	unsetenv("TRAINCTL_AGENT_TOKEN");
	agent_proc_release(&p);
	capture_release(&c);
}

static void test_cwd_and_stdin(void **state)
{
	struct agent_proc p;
	struct capture c;

	(void)state;
	capture_init(&c);
	setup_sh(&p, "pwd; cat; echo done");
	p.cwd = strdup("/tmp");
	start_ok(&p);
	assert_int_equal(pump(&p, &c, 0, 5000), 1);
	agent_proc_wait(&p);
	assert_int_equal(c.out.n, 2);
	assert_string_equal(c.out.v[0], "/tmp");
	assert_string_equal(c.out.v[1], "done");
	agent_proc_release(&p);
	capture_release(&c);
}

static void test_bind_opt_ml(void **state)
{
	char dir[] = "/tmp/test-proc-bind-XXXXXX";
	struct buf why = BUF_INIT;
	struct buf path = BUF_INIT;
	struct agent_proc p;
	struct capture c;
	FILE *f;

	(void)state;
	if (!agent_proc_can_bind(&why)) {
		print_message("no private /opt/ml here: %s\n", why.data);
		buf_release(&why);
		skip();
	}
	assert_non_null(mkdtemp(dir));
	(void)buf_addf(&path, "%s/marker", dir);
	f = fopen(path.data, "w");
	assert_non_null(f);
	fputs("bound\n", f);
	fclose(f);
	capture_init(&c);
	setup_sh(&p, "cat /opt/ml/marker");
	p.bind_dir = strdup(dir);
	start_ok(&p);
	pump(&p, &c, 0, 5000);
	agent_proc_wait(&p);
	assert_int_equal(p.exit_code, 0);
	assert_int_equal(c.out.n, 1);
	assert_string_equal(c.out.v[0], "bound");
	/* The bind stayed in the child's namespace. */
	assert_int_not_equal(access("/opt/ml/marker", F_OK), 0);
	unlink(path.data);
	rmdir(dir);
	agent_proc_release(&p);
	capture_release(&c);
	buf_release(&path);
	buf_release(&why);
}

/*
 * With named pipes the child holds read ends itself: when the agent's
 * ends close (the agent died) its writes neither fail nor kill it, and a
 * new reader gets what was written meanwhile.
 */
static void test_fifo_survives_reader(void **state)
{
	char dir[] = "/tmp/test-proc-fifo-XXXXXX";
	struct buf path = BUF_INIT;
	struct agent_proc p;
	struct capture c;

	(void)state;
	assert_non_null(mkdtemp(dir));
	capture_init(&c);
	setup_sh(&p, "echo first; sleep 1; echo second; sleep 1; echo third");
	(void)buf_addf(&path, "%s/out", dir);
	p.out_fifo = strdup(path.data);
	buf_reset(&path);
	(void)buf_addf(&path, "%s/err", dir);
	p.err_fifo = strdup(path.data);
	start_ok(&p);
	pump(&p, &c, 1, 5000);
	assert_string_equal(c.out.v[0], "first");
	close(p.out_fd);
	close(p.err_fd);
	p.out_fd = p.err_fd = -1;
	usleep(1500 * 1000);
	assert_int_equal(agent_proc_reap(&p), 0);
	p.out_fd = agent_proc_open_fifo(p.out_fifo);
	p.err_fd = agent_proc_open_fifo(p.err_fifo);
	assert_true(p.out_fd >= 0 && p.err_fd >= 0);
	assert_int_equal(pump(&p, &c, 0, 5000), 1);
	agent_proc_wait(&p);
	assert_int_equal(p.term_signal, 0);
	assert_int_equal(p.exit_code, 0);
	assert_int_equal(c.out.n, 3);
	assert_string_equal(c.out.v[1], "second");
	assert_string_equal(c.out.v[2], "third");
	unlink(p.out_fifo);
	unlink(p.err_fifo);
	rmdir(dir);
	agent_proc_release(&p);
	capture_release(&c);
	buf_release(&path);
}

static void test_which(void **state)
{
	struct strvec env = STRVEC_INIT;
	char *s;

	(void)state;
	strvec_push(&env, "PATH=/nonexistent:/bin:/usr/bin");
	s = agent_proc_which("sh", &env);
	assert_non_null(s);
	assert_true(s[0] == '/');
	free(s);
	assert_null(agent_proc_which("no-such-program-here", &env));
	s = agent_proc_which("./x", &env);
	assert_string_equal(s, "./x");
	free(s);
	strvec_release(&env);
}

static void test_utf8_repair(void **state)
{
	struct buf out = BUF_INIT;

	(void)state;
	agent_utf8_repair("ok \xc3\xa9", 5, &out);
	assert_string_equal(out.data, "ok \xc3\xa9");
	buf_reset(&out);
	/* Lone continuation, overlong '/', surrogate, NUL, truncated. */
	agent_utf8_repair("a\x80"
			  "b\xc0\xaf"
			  "c\xed\xa0\x80"
			  "d\0e\xe2\x82",
			  14, &out);
	assert_string_equal(out.data, "a\xef\xbf\xbd"
				      "b\xef\xbf\xbd\xef\xbf\xbd"
				      "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
				      "d\xef\xbf\xbd"
				      "e\xef\xbf\xbd\xef\xbf\xbd");
	buf_release(&out);
}

static void test_cut_at_char_boundary(void **state)
{
	struct strvec v = STRVEC_INIT;
	struct agent_lines l;
	/* 6 ASCII bytes and a 3-byte euro sign straddling max = 8. */
	const char in[] = "abcdef\xe2\x82\xac"
			  "gh\r\nxyz";

	(void)state;
	agent_lines_init(&l, 8);
	agent_lines_feed(&l, in, 5, on_line, &v);
	agent_lines_feed(&l, in + 5, sizeof(in) - 1 - 5, on_line, &v);
	agent_lines_flush(&l, on_line, &v);
	assert_int_equal(v.n, 3);
	assert_string_equal(v.v[0], "abcdef");
	assert_string_equal(v.v[1], "\xe2\x82\xac"
				    "gh");
	assert_string_equal(v.v[2], "xyz");
	agent_lines_release(&l);
	strvec_release(&v);
}

static int setup_group(void **state)
{
	(void)state;
	/* Grandchildren killed by the tests are reparented to us. */
	return prctl(PR_SET_CHILD_SUBREAPER, 1) ? -1 : 0;
}

/* --- the keeper ----------------------------------------------------------- */

static char keeper_dir[] = "/tmp/test-proc-keeper-XXXXXX";
static int keeper_dir_made;

/* Once per run. (mkdtemp's random part may itself end in 'X'.) */
static void make_keeper_dir(void)
{
	if (!keeper_dir_made)
		assert_non_null(mkdtemp(keeper_dir));
	keeper_dir_made = 1;
}

static void setup_kept(struct agent_proc *p, const char *script)
{
	struct buf b = BUF_INIT;

	setup_sh(p, script);
	make_keeper_dir();
	assert_int_equal(buf_addf(&b, "%s/rank0.exit", keeper_dir), 0);
	(void)unlink(b.data);
	p->exit_file = buf_detach(&b, NULL);
}

static int exited(pid_t pid)
{
	return kill(pid, 0) && errno == ESRCH;
}

static void test_keeper_exit_code(void **state)
{
	struct agent_proc p;
	struct capture c;
	pid_t keeper;
	int code = -1, sig = -1;

	(void)state;
	capture_init(&c);
	setup_kept(&p, "echo $PPID; exit 3");
	start_ok(&p);
	keeper = p.keeper;
	assert_true(keeper > 0 && keeper != p.pid);
	pump(&p, &c, 0, 5000);
	agent_proc_wait(&p);
	/* The program's parent is the keeper, the keeper's is us. */
	assert_int_equal(c.out.n, 1);
	assert_int_equal(atoi(c.out.v[0]), keeper);
	assert_int_equal(p.exit_code, 3);
	assert_int_equal(p.term_signal, 0);
	assert_int_equal(p.keeper, 0);
	assert_true(exited(keeper));
	assert_int_equal(agent_proc_read_exit(p.exit_file, &code, &sig), 0);
	assert_int_equal(code, 3);
	assert_int_equal(sig, 0);
	agent_proc_release(&p);
	capture_release(&c);
}

static void test_keeper_signal(void **state)
{
	struct agent_proc p;
	struct capture c;
	int code = -1, sig = -1;

	(void)state;
	capture_init(&c);
	setup_kept(&p, "kill -KILL $$");
	start_ok(&p);
	pump(&p, &c, 0, 5000);
	agent_proc_wait(&p);
	assert_int_equal(p.term_signal, SIGKILL);
	assert_int_equal(p.exit_code, 128 + SIGKILL);
	assert_int_equal(agent_proc_read_exit(p.exit_file, &code, &sig), 0);
	assert_int_equal(sig, SIGKILL);
	assert_int_equal(code, 128 + SIGKILL);
	agent_proc_release(&p);
	capture_release(&c);
}

/* The keeper kills the group; a signal meant for the job leaves it be. */
static void test_keeper_stragglers_and_sigterm(void **state)
{
	struct agent_proc p;
	struct capture c;
	pid_t bg;

	(void)state;
	capture_init(&c);
	/* A subshell starts the straggler, as in test_group_kill. */
	setup_kept(&p, "(sleep 1000 >/dev/null 2>&1 & echo $!); sleep 1000");
	start_ok(&p);
	pump(&p, &c, 1, 5000);
	bg = (pid_t)atoi(c.out.v[0]);
	assert_true(bg > 0);
	assert_int_equal(kill(p.keeper, SIGTERM), 0);
	assert_int_equal(kill(p.keeper, SIGHUP), 0);
	usleep(100000);
	assert_int_equal(agent_proc_reap(&p), 0);
	assert_int_equal(agent_proc_signal(&p, SIGTERM), 0);
	assert_int_equal(pump(&p, &c, 0, 5000), 1);
	agent_proc_wait(&p);
	assert_int_equal(p.term_signal, SIGTERM);
	assert_int_equal(reap_orphan(bg), SIGTERM);
	agent_proc_release(&p);
	capture_release(&c);
}

/* A keeper killed itself leaves the program to us, reaped as any child. */
static void test_keeper_killed(void **state)
{
	struct agent_proc p;
	struct capture c;
	int64_t end;

	(void)state;
	capture_init(&c);
	setup_kept(&p, "echo up; sleep 1000");
	start_ok(&p);
	pump(&p, &c, 1, 5000);
	assert_int_equal(kill(p.keeper, SIGKILL), 0);
	/* Reaping the keeper does not end the program. */
	end = time_mono_ms() + 5000;
	while (p.keeper && time_mono_ms() < end) {
		assert_int_equal(agent_proc_reap(&p), 0);
		usleep(10000);
	}
	assert_int_equal(p.keeper, 0);
	assert_int_equal(p.exited, 0);
	assert_int_equal(kill(p.pid, 0), 0);
	assert_int_equal(agent_proc_signal(&p, SIGTERM), 0);
	agent_proc_wait(&p);
	assert_int_equal(p.term_signal, SIGTERM);
	agent_proc_release(&p);
	capture_release(&c);
}

static void test_exit_file_garbled(void **state)
{
	struct buf path = BUF_INIT;
	int code = 7, sig = 7;
	FILE *f;

	(void)state;
	make_keeper_dir();
	assert_int_equal(buf_addf(&path, "%s/garbled.exit", keeper_dir), 0);
	assert_int_equal(agent_proc_read_exit(path.data, &code, &sig), -1);
	f = fopen(path.data, "w");
	assert_non_null(f);
	fputs("exit 300\n", f);
	fclose(f);
	assert_int_equal(agent_proc_read_exit(path.data, &code, &sig), -1);
	assert_int_equal(agent_proc_write_exit(path.data, 5 << 8), 0);
	assert_int_equal(agent_proc_read_exit(path.data, &code, &sig), 0);
	assert_int_equal(code, 5);
	assert_int_equal(sig, 0);
	(void)unlink(path.data);
	buf_release(&path);
}

static int teardown_group(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	if (keeper_dir_made) {
		(void)buf_addf(&b, "%s/rank0.exit", keeper_dir);
		(void)unlink(b.data);
		(void)rmdir(keeper_dir);
	}
	buf_release(&b);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_and_partial),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_exit_code),
		cmocka_unit_test(test_signal),
		cmocka_unit_test(test_group_kill),
		cmocka_unit_test(test_stragglers_killed),
		cmocka_unit_test(test_sigterm_ignored),
		cmocka_unit_test(test_exec_missing),
		cmocka_unit_test(test_bad_cwd),
		cmocka_unit_test(test_env_exact),
		cmocka_unit_test(test_cwd_and_stdin),
		cmocka_unit_test(test_bind_opt_ml),
		cmocka_unit_test(test_fifo_survives_reader),
		cmocka_unit_test(test_which),
		cmocka_unit_test(test_utf8_repair),
		cmocka_unit_test(test_cut_at_char_boundary),
		cmocka_unit_test(test_keeper_exit_code),
		cmocka_unit_test(test_keeper_signal),
		cmocka_unit_test(test_keeper_stragglers_and_sigterm),
		cmocka_unit_test(test_keeper_killed),
		cmocka_unit_test(test_exit_file_garbled),
	};

	return cmocka_run_group_tests_name("agent/proc", tests, setup_group,
					   teardown_group);
}
