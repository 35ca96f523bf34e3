#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "api/job_record.h"
#include "api/logs_json.h"
#include "api/requests.h"
#include "cli/cli.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * logs NAME [--host algo-N] [-f]: prints the job's log streams (one per
 * host and attempt, CloudWatch's <job>/algo-<n>-<epoch>), each line
 * prefixed by its host when there are several. With -f it follows them
 * until the job ends: the controller holds the request until new lines
 * arrive, so following costs no polling.
 */

enum logs_opt { OPT_HOST = 1, OPT_FOLLOW = 'f' };

static const struct option logs_opts[] = {
	{ "host", required_argument, NULL, OPT_HOST },
	{ "follow", no_argument, NULL, OPT_FOLLOW },
	CLI_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/* A stream name no job has: "<job>/pending" (streams are algo-N-EPOCH). */
#define FOLLOW_NONE "pending"

struct stream_pos {
	char *name;
	long long offset;
};

struct follow_state {
	struct stream_pos *s;
	size_t n;
	size_t alloc; /* allocated count of s */
};

static int get_page(struct cli_ctx *ctx, const char *job, const char *stream,
		    long long offset, int follow, struct api_log_events *ev)
{
	struct cli_reply reply = CLI_REPLY_INIT;
	struct buf path = BUF_INIT;
	struct buf err = BUF_INIT;
	int rc;

	if (stream) {
		/*
		 * As SigV4 canonicalizes a query: values encoded ('/' is
		 * %2F) and parameters sorted, because libcurl signs the
		 * query exactly as sent.
		 */
		char *enc = curl_easy_escape(NULL, stream, 0);

		(void)buf_addf(
			&path,
			"/v1/training-jobs/%s/logs?%soffset=%lld&stream=%s",
			job, follow ? "follow=1&" : "", offset,
			enc ? enc : stream);
		curl_free(enc);
	} else
		(void)buf_addf(&path, "/v1/training-jobs/%s/logs", job);
	rc = cli_http_get(ctx, path.data, &reply, &err);
	if (rc) {
		cli_error("%s", err.data);
		rc = CLI_EXIT_TRANSPORT;
	} else if (reply.status < 200 || reply.status > 299) {
		cli_error("%s: %s", reply.err_type,
			  reply.err_message ? reply.err_message : "");
		rc = CLI_EXIT_API;
	} else if (api_log_events_parse(reply.body.data, reply.body.len, ev,
					&err)) {
		cli_error("bad logs reply: %s", err.data);
		rc = CLI_EXIT_TRANSPORT;
	}
	cli_reply_release(&reply);
	buf_release(&path);
	buf_release(&err);
	return rc;
}

/* "job/algo-2-1796211299" -> "algo-2". */
static void host_of(const char *stream, char *out, size_t size)
{
	const char *p = strrchr(stream, '/');
	const char *dash;
	size_t n;

	p = p ? p + 1 : stream;
	dash = strrchr(p, '-');
	n = dash ? (size_t)(dash - p) : strlen(p);
	if (n >= size)
		n = size - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

static void refresh_streams(struct follow_state *fs,
			    const struct api_log_events *ev, const char *host)
{
	size_t i, k;

	for (i = 0; i < ev->n_streams; i++) {
		char h[64];
		int known = 0;

		host_of(ev->streams[i], h, sizeof(h));
		if (host && strcmp(h, host))
			continue;
		for (k = 0; k < fs->n; k++)
			known |= !strcmp(fs->s[k].name, ev->streams[i]);
		if (known)
			continue;
		ALLOC_GROW(fs->s, fs->n + 1, fs->alloc);
		fs->s[fs->n].name = xstrdup(ev->streams[i]);
		fs->s[fs->n].offset = 0;
		fs->n++;
	}
}

/* Prints what is new in every stream; *printed counts the lines. */
static int drain(struct cli_ctx *ctx, const char *job, struct follow_state *fs,
		 int prefix, size_t *printed)
{
	size_t i, k;
	int rc;

	for (i = 0; i < fs->n; i++) {
		for (;;) {
			struct api_log_events ev;
			char h[64];

			rc = get_page(ctx, job, fs->s[i].name, fs->s[i].offset,
				      0, &ev);
			if (rc)
				return rc;
			host_of(fs->s[i].name, h, sizeof(h));
			for (k = 0; k < ev.n; k++)
				if (prefix)
					printf("[%s] %s\n", h,
					       ev.items[k].message);
				else
					printf("%s\n", ev.items[k].message);
			*printed += ev.n;
			fs->s[i].offset = ev.next_offset;
			k = ev.n;
			api_log_events_release(&ev);
			if (k == 0)
				break;
		}
	}
	fflush(stdout);
	return 0;
}

static int job_ended(struct cli_ctx *ctx, const char *job)
{
	struct cli_reply reply = CLI_REPLY_INIT;
	struct api_job_record rec;
	struct buf body = BUF_INIT;
	struct buf err = BUF_INIT;
	int ended = 0;

	if (api_name_request_build(job, &body) ||
	    cli_http_call(ctx, "DescribeTrainingJob", &body, &reply, &err) ||
	    reply.status != 200) {
		ended = -1;
	} else if (!api_job_record_from_json(reply.body.data, reply.body.len,
					     &rec, &err)) {
		ended = rec.status && (!strcmp(rec.status, "Completed") ||
				       !strcmp(rec.status, "Failed") ||
				       !strcmp(rec.status, "Stopped"));
		api_job_record_release(&rec);
	}
	cli_reply_release(&reply);
	buf_release(&body);
	buf_release(&err);
	return ended;
}

int cli_cmd_logs(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find("logs");
	struct follow_state fs = { NULL, 0, 0 };
	const char *host = NULL;
	const char *job;
	int follow = 0;
	int64_t t0;
	int opt, rc = 0;
	size_t i;

	while ((opt = getopt_long(argc, argv, ":hf", logs_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_HOST:
			host = optarg;
			break;
		case OPT_FOLLOW:
			follow = 1;
			break;
		default:
			rc = cli_common_option(ctx, cmd, opt, argv);
			if (rc)
				return rc < 0 ? CLI_EXIT_OK : rc;
		}
	}
	if (optind >= argc)
		return cli_usage_error(cmd, "missing job name");
	if (optind + 1 < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'",
				       argv[optind + 1]);
	job = argv[optind];
	for (;;) {
		struct api_log_events ev;
		size_t printed = 0;
		int ended;

		rc = get_page(ctx, job, NULL, 0, 0, &ev);
		if (rc)
			break;
		refresh_streams(&fs, &ev, host);
		api_log_events_release(&ev);
		rc = drain(ctx, job, &fs, !host && fs.n > 1, &printed);
		if (rc || !follow)
			break;
		if (printed)
			continue;
		ended = job_ended(ctx, job);
		if (ended) {
			/* One last look for lines that raced the end. */
			rc = drain(ctx, job, &fs, !host && fs.n > 1, &printed);
			break;
		}
		/*
		 * Wait for news: the controller answers when any line
		 * arrives, when the job changes, or after its follow
		 * timeout. Before the job has a stream, follow one it does
		 * not have (yet): that waits the same way.
		 */
		t0 = time_mono_ms();
		rc = get_page(ctx, job, fs.n ? fs.s[0].name : FOLLOW_NONE,
			      fs.n ? fs.s[0].offset : 0, 1, &ev);
		if (rc)
			break;
		api_log_events_release(&ev);
		if (time_mono_ms() - t0 < 2) {
			struct timespec ts = { 0, 20000000L };

			/* Answered at once: no spinning, should it go on. */
			nanosleep(&ts, NULL);
		}
	}
	for (i = 0; i < fs.n; i++)
		free(fs.s[i].name);
	free(fs.s);
	return rc;
}
