/*
 * Tests api/agent_proto.c: every message survives build -> parse -> build
 * unchanged, the examples of docs/agent-protocol.md parse, and every
 * required member, when missing or of the wrong type, is refused with a
 * message that names it. Limits (hosts, log lines, string sizes) and text
 * that is not UTF-8 are refused too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/agent_proto.h"
#include "common/buf.h"
#include "common/err.h"

/* ---- fixtures ---- */

static char *xs(const char *s)
{
	return s ? strdup(s) : NULL;
}

static char **str_list(int n, ...)
{
	char **l = calloc((size_t)n + 1, sizeof(*l));
	va_list ap;
	int i;

	va_start(ap, n);
	for (i = 0; i < n; i++)
		l[i] = xs(va_arg(ap, const char *));
	va_end(ap);
	return l;
}

/* Fills a with a script-mode assignment that uses every member. */
static void full_assignment(struct api_assignment *a, int script)
{
	memset(a, 0, sizeof(*a));
	a->job = xs("mnist-1");
	a->job_uid = xs("5e1f0c0ffee0d00d");
	a->attempt = 2;
	a->action = API_ACTION_STOP;
	a->job_arn = xs("arn:aws:sagemaker:us-east-1:000000000000:"
			"training-job/mnist-1");
	a->algo = xs("algo-2");
	a->host_index = 1;
	a->hosts = str_list(2, "algo-1", "algo-2");
	a->n_hosts = 2;
	a->addresses = str_list(2, "10.0.0.1", "10.0.0.2");
	a->instance_type = xs("ml.c5.xlarge");
	a->hyperparameters_json = xs("{\"epochs\":\"10\",\"lr\":\"0.1\"}");
	a->input_data_config_json =
		xs("{\"train\":{\"TrainingInputMode\":\"File\"}}");
	a->resource_config_json = xs(
		"{\"current_host\":\"algo-2\",\"hosts\":[\"algo-1\","
		"\"algo-2\"],\"x\":0.30000000000000004,\"y\":0.1,"
		"\"z\":1E22,\"u\":\"caf\xc3\xa9\\t\\u0001/\",\"topology\":null}");
	a->channels = calloc(2, sizeof(*a->channels));
	a->n_channels = 2;
	a->channels[0].name = xs("train");
	a->channels[0].s3_uri = xs("s3://data/mnist/");
	a->channels[0].s3_data_type = xs("S3Prefix");
	a->channels[0].distribution = xs("ShardedByS3Key");
	a->channels[0].content_type = xs("text/csv");
	a->channels[0].input_mode = xs("File");
	a->channels[0].compression = xs("Gzip");
	a->channels[0].record_wrapper = xs("RecordIO");
	a->channels[0].shard_count = 3;
	a->channels[0].shard_index = 2;
	a->channels[1].name = xs("test");
	a->channels[1].s3_uri = xs("file:///data/test");
	a->channels[1].shuffle = 1;
	a->channels[1].shuffle_seed = -7;
	a->channels[1].s3_data_type = xs("S3Prefix");
	a->channels[1].distribution = xs("FullyReplicated");
	a->environment = calloc(2, sizeof(*a->environment));
	a->n_environment = 2;
	a->environment[0].key = xs("FOO");
	a->environment[0].value = xs("bar");
	a->environment[1].key = xs("EMPTY");
	a->environment[1].value = xs("");
	if (script) {
		a->launch_mode = API_LAUNCH_SCRIPT;
		a->runtime = xs("/usr/bin/python3");
		a->program = xs("train.py");
		a->submit_directory = xs("s3://code/sourcedir.tar.gz");
		a->checkpoint_s3_uri = xs("s3://ckpt/mnist/");
		a->checkpoint_local_path = xs("/opt/ml/checkpoints/");
		a->tensorboard_s3_uri = xs("s3://tb/mnist");
		a->tensorboard_local_path = xs("/opt/ml/output/tensorboard");
		a->local_root = xs("/var/lib/trainctl/s3");
		a->debug_hook_config_json =
			xs("{\"LocalPath\":\"/opt/ml/output/tensors\"}");
		a->profiler_config_json =
			xs("{\"ProfilingIntervalInMilliseconds\":500}");
		a->debug_s3_uri = xs("s3://models/out/job/debug-output");
		a->debug_local_path = xs("/opt/ml/output/tensors");
		a->profiler_s3_uri = xs("s3://models/out/job/profiler-output");
		a->profiler_local_path = xs("/opt/ml/output/profiler");
		a->has_locations = 1;
		a->loc_s3_prefixes = str_list(2, "data/mnist/", "models/");
		a->n_loc_s3_prefixes = 2;
		a->loc_file_roots = str_list(1, "/srv/data");
		a->n_loc_file_roots = 1;
	} else {
		a->launch_mode = API_LAUNCH_EXEC;
		a->argv = str_list(3, "/opt/bin/train", "train", "caf\xc3\xa9");
		a->has_locations = 1;
		a->loc_s3_any = 1;
		a->loc_file_roots = str_list(0);
	}
	a->output_path = xs("s3://models/out");
	a->blob_url = xs("http://127.0.0.1:8080/v1/blobs");
	a->master_addr = xs("10.0.0.1");
	a->master_port = 29500;
	a->processes_per_host = 8;
	a->grace_ms = 120000;
	a->hang_ms = 1800000;
}

static void full_work(struct api_work *w)
{
	memset(w, 0, sizeof(*w));
	w->version = 42;
	w->n = 2;
	w->items = calloc(2, sizeof(*w->items));
	full_assignment(&w->items[0], 1);
	full_assignment(&w->items[1], 0);
}

static char *build_work_text(void)
{
	struct api_work w;
	struct buf out = BUF_INIT;

	full_work(&w);
	assert_int_equal(api_work_build(&w, &out), 0);
	api_work_release(&w);
	return buf_detach(&out, NULL);
}

static void full_status(struct api_status *s)
{
	struct api_report *r;

	memset(s, 0, sizeof(*s));
	s->boot_id = xs("b00t");
	s->n = 2;
	s->items = calloc(2, sizeof(*s->items));
	r = &s->items[0];
	r->job = xs("mnist-1");
	r->job_uid = xs("5e1f0c0ffee0d00d");
	r->attempt = 1;
	r->algo = xs("algo-2");
	r->phase = API_PHASE_EXITED;
	r->started_ms = 1796211299642;
	r->n_procs = 3;
	r->procs = calloc(3, sizeof(*r->procs));
	r->procs[0].rank = 0;
	r->procs[0].pid = 4242;
	r->procs[0].started_ms = 1796211299650;
	r->procs[1].rank = 1;
	r->procs[1].pid = 4243;
	r->procs[1].started_ms = 1796211299651;
	r->procs[1].exited = 1;
	r->procs[1].exit_code = 3;
	r->procs[1].exited_ms = 1796211399651;
	r->procs[2].rank = 2;
	r->procs[2].pid = 4244;
	r->procs[2].started_ms = 1796211299652;
	r->procs[2].exited = 1;
	r->procs[2].signal = 9;
	r->procs[2].exited_ms = 1796211399652;
	r->failure = xs("ExecuteUserScriptError:\nExitCode 3");
	r = &s->items[1];
	r->job = xs("mnist-0");
	r->attempt = 7;
	r->algo = xs("algo-1");
	r->phase = API_PHASE_ERROR;
	r->error = xs("channel 'train': no objects under s3://data/mnist/");
}

static char *build_status_text(void)
{
	struct api_status s;
	struct buf out = BUF_INIT;

	full_status(&s);
	assert_int_equal(api_status_build(&s, &out), 0);
	api_status_release(&s);
	return buf_detach(&out, NULL);
}

static void make_lines(struct api_log_batch *b, size_t n)
{
	size_t i;

	memset(b, 0, sizeof(*b));
	b->n = n;
	b->lines = calloc(n ? n : 1, sizeof(*b->lines));
	for (i = 0; i < n; i++) {
		b->lines[i].job = xs("mnist-1");
		b->lines[i].job_uid = i % 2 ? NULL : xs("5e1f0c0ffee0d00d");
		b->lines[i].attempt = 1;
		b->lines[i].algo = xs("algo-1");
		b->lines[i].rank = (int)(i % 4);
		b->lines[i].is_stderr = (int)(i % 2);
		b->lines[i].ts_ms = 1796211299642 + (int64_t)i;
		b->lines[i].text =
			xs(i == 0 ? "epoch 1 \"loss\"=0.5\t\xe2\x9c\x93" : "x");
	}
}

/* ---- mutation helpers ---- */

/*
 * Replaces (or deletes, when v is NULL) the member at a dotted path such as
 * "assignments.0.launch.mode" in json, and returns the new text. Takes v.
 */
static char *mutate(const char *json, const char *path, json_t *v)
{
	json_error_t jerr;
	json_t *root = json_loads(json, 0, &jerr), *cur = root;
	char *p = strdup(path), *seg = p, *next, *text;

	assert_non_null(root);
	for (;;) {
		next = strchr(seg, '.');
		if (next)
			*next = '\0';
		if (!next)
			break;
		if (json_is_array(cur))
			cur = json_array_get(cur, strtoul(seg, NULL, 10));
		else
			cur = json_object_get(cur, seg);
		assert_non_null(cur);
		seg = next + 1;
	}
	if (json_is_array(cur))
		if (v)
			json_array_set_new(cur, strtoul(seg, NULL, 10), v);
		else
			json_array_remove(cur, strtoul(seg, NULL, 10));
	else if (v)
		json_object_set_new(cur, seg, v);
	else
		assert_int_equal(json_object_del(cur, seg), 0);
	text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	free(p);
	return text;
}

enum msg { MSG_WORK, MSG_STATUS, MSG_REGISTER, MSG_REPLY, MSG_LOGS };

static int parse_any(enum msg m, const char *json, size_t len, struct buf *err)
{
	struct api_work w;
	struct api_status s;
	struct api_register r;
	struct api_log_batch b;
	int64_t h, d;
	int ret = 0;

	switch (m) {
	case MSG_WORK:
		ret = api_work_parse(json, len, &w, err);
		if (!ret)
			api_work_release(&w);
		else
			assert_null(w.items);
		break;
	case MSG_STATUS:
		ret = api_status_parse(json, len, &s, err);
		if (!ret)
			api_status_release(&s);
		else
			assert_null(s.items);
		break;
	case MSG_REGISTER:
		ret = api_register_parse(json, len, &r, err);
		if (!ret)
			api_register_release(&r);
		else
			assert_null(r.host);
		break;
	case MSG_REPLY:
		ret = api_register_reply_parse(json, len, &h, &d, err);
		break;
	case MSG_LOGS:
		ret = api_log_batch_parse(json, len, &b, err);
		if (!ret)
			api_log_batch_release(&b);
		else
			assert_null(b.lines);
		break;
	}
	return ret;
}

/* The last path segment, as messages name it. */
static const char *leaf(const char *path)
{
	const char *dot = strrchr(path, '.');

	return dot ? dot + 1 : path;
}

/* Applies the mutation and expects a refusal that mentions `mention`. */
static void expect_refused(enum msg m, const char *base, const char *path,
			   json_t *v, const char *mention)
{
	char *text = mutate(base, path, v);
	struct buf err = BUF_INIT;

	if (parse_any(m, text, strlen(text), &err) != ERR_INVALID)
		fail_msg("%s: accepted after changing %s", text, path);
	if (!strstr(err.data, mention ? mention : leaf(path)))
		fail_msg("changing %s: error '%s' does not name '%s'", path,
			 err.data, mention ? mention : leaf(path));
	free(text);
	buf_release(&err);
}

static void expect_accepted(enum msg m, const char *base, const char *path,
			    json_t *v)
{
	char *text = mutate(base, path, v);
	struct buf err = BUF_INIT;

	if (parse_any(m, text, strlen(text), &err))
		fail_msg("changing %s: refused: %s", path, err.data);
	free(text);
	buf_release(&err);
}

/* ---- work ---- */

static void test_work_round_trip(void **state)
{
	struct api_work w;
	struct buf err = BUF_INIT, again = BUF_INIT;
	char *text = build_work_text();
	struct api_assignment *a;

	(void)state;
	assert_int_equal(api_work_parse(text, strlen(text), &w, &err), 0);
	assert_int_equal(w.version, 42);
	assert_int_equal(w.n, 2);
	a = &w.items[0];
	assert_string_equal(a->job, "mnist-1");
	assert_int_equal(a->attempt, 2);
	assert_int_equal(a->action, API_ACTION_STOP);
	assert_string_equal(a->algo, "algo-2");
	assert_int_equal(a->host_index, 1);
	assert_int_equal(a->n_hosts, 2);
	assert_string_equal(a->hosts[1], "algo-2");
	assert_null(a->hosts[2]);
	assert_string_equal(a->addresses[0], "10.0.0.1");
	assert_string_equal(a->hyperparameters_json,
			    "{\"epochs\":\"10\",\"lr\":\"0.1\"}");
	/* Key order and every double survive, 0.1 as 0.1. */
	assert_string_equal(
		a->resource_config_json,
		"{\"current_host\":\"algo-2\",\"hosts\":[\"algo-1\","
		"\"algo-2\"],\"x\":0.30000000000000004,\"y\":0.1,"
		"\"z\":1e+22,\"u\":\"caf\xc3\xa9\\t\\u0001/\","
		"\"topology\":null}");
	assert_int_equal(a->n_channels, 2);
	assert_string_equal(a->channels[0].record_wrapper, "RecordIO");
	assert_int_equal(a->channels[0].shard_count, 3);
	assert_int_equal(a->channels[0].shard_index, 2);
	assert_null(a->channels[1].content_type);
	assert_int_equal(a->channels[0].shuffle, 0);
	assert_int_equal(a->channels[1].shuffle, 1);
	assert_int_equal(a->channels[1].shuffle_seed, -7);
	assert_int_equal(a->channels[1].shard_count, 0);
	assert_int_equal(a->n_environment, 2);
	assert_string_equal(a->environment[1].key, "EMPTY");
	assert_int_equal(a->launch_mode, API_LAUNCH_SCRIPT);
	assert_string_equal(a->program, "train.py");
	assert_null(a->argv);
	assert_string_equal(a->checkpoint_local_path, "/opt/ml/checkpoints/");
	assert_string_equal(a->tensorboard_s3_uri, "s3://tb/mnist");
	assert_string_equal(a->tensorboard_local_path,
			    "/opt/ml/output/tensorboard");
	assert_string_equal(a->local_root, "/var/lib/trainctl/s3");
	assert_int_equal(a->master_port, 29500);
	assert_int_equal(a->processes_per_host, 8);
	assert_int_equal(a->grace_ms, 120000);
	assert_int_equal(a->hang_ms, 1800000);
	assert_true(a->has_locations);
	assert_false(a->loc_s3_any);
	assert_int_equal(a->n_loc_s3_prefixes, 2);
	assert_string_equal(a->loc_s3_prefixes[1], "models/");
	assert_false(a->loc_file_any);
	assert_int_equal(a->n_loc_file_roots, 1);
	assert_string_equal(a->loc_file_roots[0], "/srv/data");
	a = &w.items[1];
	assert_true(a->has_locations);
	assert_true(a->loc_s3_any);
	assert_false(a->loc_file_any);
	assert_int_equal(a->n_loc_file_roots, 0);
	assert_int_equal(a->launch_mode, API_LAUNCH_EXEC);
	assert_string_equal(a->argv[2], "caf\xc3\xa9");
	assert_null(a->argv[3]);
	assert_null(a->runtime);
	assert_null(a->checkpoint_s3_uri);
	assert_null(a->tensorboard_s3_uri);
	assert_null(a->local_root);
	assert_int_equal(api_work_build(&w, &again), 0);
	assert_string_equal(again.data, text);
	api_work_release(&w);
	assert_null(w.items);
	free(text);
	buf_release(&err);
	buf_release(&again);
}

/* The example of docs/agent-protocol.md, verbatim. */
static const char doc_assignment[] =
	"{\"job\": \"mnist-1\", \"attempt\": 1, \"action\": \"run\","
	"\"job_arn\": \"arn:aws:sagemaker:us-east-1:000000000000:training-job/"
	"mnist-1\","
	"\"algo\": \"algo-2\", \"host_index\": 1, \"hosts\": [\"algo-1\", "
	"\"algo-2\"],"
	"\"addresses\": {\"algo-1\": \"127.0.0.1\", \"algo-2\": "
	"\"127.0.0.1\"},"
	"\"instance_type\": \"ml.c5.xlarge\","
	"\"hyperparameters\": {\"epochs\": \"10\"},"
	"\"input_data_config\": {\"train\": {\"TrainingInputMode\": \"File\", "
	"\"S3DistributionType\": \"FullyReplicated\", \"RecordWrapperType\": "
	"\"None\"}},"
	"\"resource_config\": {\"current_host\": \"algo-2\", "
	"\"current_instance_type\": \"ml.c5.xlarge\", \"current_group_name\": "
	"\"homogeneousCluster\", \"hosts\": [\"algo-1\",\"algo-2\"], "
	"\"instance_groups\": [{\"instance_group_name\": "
	"\"homogeneousCluster\", \"instance_type\": \"ml.c5.xlarge\", "
	"\"hosts\": [\"algo-1\",\"algo-2\"]}], \"network_interface_name\": "
	"\"lo\", \"topology\": null},"
	"\"channels\": [{\"name\": \"train\", \"uri\": \"s3://data/mnist/\", "
	"\"data_type\": \"S3Prefix\", \"distribution\": \"ShardedByS3Key\"}],"
	"\"environment\": {\"FOO\": \"bar\"},"
	"\"launch\": {\"mode\": \"exec\", \"argv\": [\"/opt/bin/train\", "
	"\"train\"]},"
	"\"output_path\": \"s3://models/out\","
	"\"checkpoint\": {\"s3_uri\": \"s3://ckpt/mnist/\", \"local_path\": "
	"\"/opt/ml/checkpoints/\"},"
	"\"storage\": {\"blob_url\": \"http://127.0.0.1:8080/v1/blobs\", "
	"\"local_root\": \"/var/lib/trainctl/s3\"},"
	"\"locations\": {\"s3_prefixes\": [\"data/mnist/\", \"models/\"], "
	"\"file_roots\": [\"/srv/datasets\"]},"
	"\"rendezvous\": {\"master_addr\": \"127.0.0.1\", \"master_port\": "
	"29500},"
	"\"processes_per_host\": 1,"
	"\"grace_ms\": 120000}";

static void test_work_doc_example(void **state)
{
	struct api_work w;
	struct buf err = BUF_INIT, body = BUF_INIT;

	(void)state;
	(void)buf_addf(&body, "{\"version\": 3, \"assignments\": [%s]}",
		       doc_assignment);
	if (api_work_parse(body.data, body.len, &w, &err))
		fail_msg("doc example refused: %s", err.data);
	assert_int_equal(w.version, 3);
	assert_string_equal(w.items[0].hyperparameters_json,
			    "{\"epochs\":\"10\"}");
	assert_string_equal(w.items[0].input_data_config_json,
			    "{\"train\":{\"TrainingInputMode\":\"File\","
			    "\"S3DistributionType\":\"FullyReplicated\","
			    "\"RecordWrapperType\":\"None\"}}");
	assert_string_equal(w.items[0].addresses[1], "127.0.0.1");
	assert_string_equal(w.items[0].argv[0], "/opt/bin/train");
	assert_string_equal(w.items[0].checkpoint_s3_uri, "s3://ckpt/mnist/");
	assert_true(w.items[0].has_locations);
	assert_string_equal(w.items[0].loc_s3_prefixes[1], "models/");
	assert_string_equal(w.items[0].loc_file_roots[0], "/srv/datasets");
	api_work_release(&w);
	buf_release(&body);
	buf_release(&err);
}

static const char *const assignment_required[] = {
	"job",
	"attempt",
	"action",
	"job_arn",
	"algo",
	"host_index",
	"hosts",
	"addresses",
	"instance_type",
	"hyperparameters",
	"input_data_config",
	"resource_config",
	"channels",
	"environment",
	"launch",
	"launch.mode",
	"output_path",
	"storage",
	"storage.blob_url",
	"rendezvous",
	"rendezvous.master_addr",
	"rendezvous.master_port",
	"processes_per_host",
	"grace_ms",
	"channels.0.name",
	"channels.0.uri",
	"channels.0.data_type",
	"channels.0.distribution",
	"checkpoint.s3_uri",
	"checkpoint.local_path",
	"tensorboard.s3_uri",
	"tensorboard.local_path",
	"launch.runtime",
	"launch.program",
	"addresses.algo-1",
};

static void test_work_missing(void **state)
{
	char *text = build_work_text(), path[128];
	size_t i;

	(void)state;
	expect_refused(MSG_WORK, text, "version", NULL, NULL);
	expect_refused(MSG_WORK, text, "assignments", NULL, NULL);
	for (i = 0;
	     i < sizeof(assignment_required) / sizeof(assignment_required[0]);
	     i++) {
		(void)snprintf(path, sizeof(path), "assignments.0.%s",
			       assignment_required[i]);
		expect_refused(MSG_WORK, text, path, NULL, NULL);
		expect_refused(MSG_WORK, text, path, json_null(),
			       leaf(assignment_required[i]));
	}
	expect_refused(MSG_WORK, text, "assignments.1.launch.argv", NULL, NULL);
	/* Optional members may go, or be null. */
	expect_accepted(MSG_WORK, text, "assignments.0.checkpoint", NULL);
	expect_accepted(MSG_WORK, text, "assignments.0.checkpoint",
			json_null());
	expect_accepted(MSG_WORK, text, "assignments.0.storage.local_root",
			NULL);
	expect_accepted(MSG_WORK, text, "assignments.0.tensorboard", NULL);
	expect_accepted(MSG_WORK, text, "assignments.0.tensorboard",
			json_null());
	expect_accepted(MSG_WORK, text, "assignments.0.launch.submit_directory",
			json_null());
	expect_accepted(MSG_WORK, text, "assignments.0.channels.0.compression",
			json_null());
	expect_accepted(MSG_WORK, text, "assignments.0.unknown_member",
			json_string("newer peers may add members"));
	free(text);
}

static void test_work_types(void **state)
{
	char *text = build_work_text();

	(void)state;
	expect_refused(MSG_WORK, text, "version", json_string("1"), NULL);
	expect_refused(MSG_WORK, text, "version", json_integer(-1), NULL);
	expect_refused(MSG_WORK, text, "assignments", json_object(), NULL);
	expect_refused(MSG_WORK, text, "assignments.0", json_string("x"),
		       "assignments[0]");
	expect_refused(MSG_WORK, text, "assignments.0.job", json_integer(1),
		       NULL);
	expect_refused(MSG_WORK, text, "assignments.0.job", json_string(""),
		       NULL);
	expect_refused(MSG_WORK, text, "assignments.0.attempt",
		       json_string("2"), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.attempt", json_real(2.0),
		       NULL);
	expect_refused(MSG_WORK, text, "assignments.0.attempt", json_integer(0),
		       NULL);
	expect_refused(MSG_WORK, text, "assignments.0.action",
		       json_string("pause"), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.hosts",
		       json_string("algo-1"), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.hosts.0", json_integer(1),
		       "hosts[0]");
	expect_refused(MSG_WORK, text, "assignments.0.hosts.0",
		       json_string("algo-2"), "twice");
	expect_refused(MSG_WORK, text, "assignments.0.hosts", json_array(),
		       "hosts");
	expect_refused(MSG_WORK, text, "assignments.0.host_index",
		       json_integer(0), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.host_index",
		       json_integer(2), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.addresses.algo-2",
		       json_integer(7), "algo-2");
	expect_refused(MSG_WORK, text, "assignments.0.addresses", json_array(),
		       NULL);
	expect_refused(MSG_WORK, text, "assignments.0.hyperparameters.lr",
		       json_real(0.1), "lr");
	expect_refused(MSG_WORK, text, "assignments.0.hyperparameters",
		       json_string("{}"), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.input_data_config",
		       json_array(), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.resource_config",
		       json_integer(1), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.channels", json_object(),
		       NULL);
	expect_refused(MSG_WORK, text, "assignments.0.channels.0",
		       json_integer(3), "channels[0]");
	expect_refused(MSG_WORK, text, "assignments.0.channels.0.uri",
		       json_false(), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.channels.1.content_type",
		       json_integer(5), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.environment.FOO",
		       json_integer(5), "FOO");
	expect_refused(MSG_WORK, text, "assignments.0.launch",
		       json_string("exec"), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.launch.mode",
		       json_string("docker"), NULL);
	expect_refused(MSG_WORK, text, "assignments.1.launch.argv",
		       json_array(), NULL);
	expect_refused(MSG_WORK, text, "assignments.1.launch.argv.1",
		       json_null(), "argv[1]");
	expect_refused(MSG_WORK, text, "assignments.0.launch.program",
		       json_string(""), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.checkpoint",
		       json_string("s3://x"), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.storage.local_root",
		       json_true(), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.rendezvous.master_port",
		       json_integer(65536), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.rendezvous.master_port",
		       json_string("29500"), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.processes_per_host",
		       json_integer(0), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.grace_ms",
		       json_integer(-5), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.locations", json_true(),
		       NULL);
	expect_refused(MSG_WORK, text, "assignments.0.locations.s3_prefixes",
		       json_string("data/"), NULL);
	expect_refused(MSG_WORK, text, "assignments.0.locations.s3_prefixes",
		       NULL, NULL);
	expect_refused(MSG_WORK, text, "assignments.0.locations.s3_prefixes.0",
		       json_integer(1), "s3_prefixes[0]");
	expect_refused(MSG_WORK, text, "assignments.0.locations.file_roots.0",
		       json_string("srv/data"), "file_roots");
	/* An older controller sends none: every location, as before. */
	expect_accepted(MSG_WORK, text, "assignments.0.locations", NULL);
	free(text);
}

static void test_work_limits(void **state)
{
	char *text = build_work_text(), *big;
	json_t *hosts = json_array(), *addrs = json_object();
	struct buf err = BUF_INIT;
	char name[32];
	size_t n;
	int i;

	(void)state;
	for (i = 1; i <= API_PROTO_MAX_HOSTS + 1; i++) {
		(void)snprintf(name, sizeof(name), "algo-%d", i);
		json_array_append_new(hosts, json_string(name));
		json_object_set_new(addrs, name, json_string("10.0.0.1"));
	}
	/* Extra addresses are ignored; 257 hosts are not. */
	{
		char *t = mutate(text, "assignments.0.addresses", addrs);

		expect_refused(MSG_WORK, t, "assignments.0.hosts", hosts,
			       "1..256 entries");
		free(t);
	}

	/* A string over 1 MiB, wherever it is. */
	n = API_PROTO_MAX_STRING + 1;
	big = malloc(n + 1);
	memset(big, 'a', n);
	big[n] = '\0';
	expect_refused(MSG_WORK, text, "assignments.0.job_arn",
		       json_string(big), "longer than 1 MiB");
	expect_refused(MSG_WORK, text, "assignments.0.resource_config.nested",
		       json_string(big), "resource_config.nested");
	big[n - 1] = '\0';
	expect_accepted(MSG_WORK, text, "assignments.0.job_arn",
			json_string(big));
	free(big);

	/* A body over the limit is refused before it is read. */
	n = API_PROTO_MAX_BODY + 1;
	big = malloc(n);
	memset(big, ' ', n);
	big[0] = '{';
	big[n - 1] = '}';
	assert_int_equal(parse_any(MSG_WORK, big, n, &err), ERR_INVALID);
	assert_non_null(strstr(err.data, "larger than"));
	free(big);
	free(text);
	buf_release(&err);
}

/* ---- status ---- */

/* A container's launch, a prune request and a host's images travel. */
static void test_containers(void **state)
{
	struct api_work w, back;
	struct api_status st, sback;
	struct buf out = BUF_INIT, err = BUF_INIT;
	const struct api_assignment *a;

	(void)state;
	full_work(&w);
	w.prune_images = 3;
	api_assignment_release(&w.items[1]);
	full_assignment(&w.items[1], 0);
	w.items[1].launch_mode = API_LAUNCH_CONTAINER;
	w.items[1].image = xs("reg:5000/t/bb@sha256:00");
	w.items[1].entrypoint = str_list(2, "/bin/sh", "-c");
	w.items[1].registry_auth = xs("{\"auths\":{}}");
	w.items[1].tls_verify = 1;
	assert_int_equal(api_work_build(&w, &out), 0);
	assert_int_equal(api_work_parse(out.data, out.len, &back, &err), 0);
	assert_int_equal(back.prune_images, 3);
	a = &back.items[1];
	assert_int_equal(a->launch_mode, API_LAUNCH_CONTAINER);
	assert_string_equal(a->image, "reg:5000/t/bb@sha256:00");
	assert_string_equal(a->entrypoint[1], "-c");
	assert_null(a->entrypoint[2]);
	assert_string_equal(a->argv[0], "/opt/bin/train");
	assert_string_equal(a->registry_auth, "{\"auths\":{}}");
	assert_int_equal(a->tls_verify, 1);
	assert_int_equal(back.items[0].launch_mode, API_LAUNCH_SCRIPT);
	api_work_release(&back);
	/* No entry point: the image's own; tls_verify must be a boolean. */
	free(w.items[1].entrypoint[0]);
	free(w.items[1].entrypoint[1]);
	free(w.items[1].entrypoint);
	w.items[1].entrypoint = NULL;
	buf_reset(&out);
	assert_int_equal(api_work_build(&w, &out), 0);
	assert_int_equal(api_work_parse(out.data, out.len, &back, &err), 0);
	assert_null(back.items[1].entrypoint);
	api_work_release(&back);
	expect_refused(MSG_WORK, out.data, "assignments.1.launch.tls_verify",
		       json_string("yes"), NULL);
	expect_refused(MSG_WORK, out.data, "assignments.1.launch.image",
		       json_string(""), NULL);
	expect_refused(MSG_WORK, out.data, "prune_images", json_integer(-1),
		       NULL);
	api_work_release(&w);

	full_status(&st);
	st.images_json = xs("[{\"id\":\"ab\",\"names\":[\"r/x:1\"],"
			    "\"size\":12}]");
	st.images_pruned = 2;
	buf_reset(&out);
	assert_int_equal(api_status_build(&st, &out), 0);
	assert_int_equal(api_status_parse(out.data, out.len, &sback, &err), 0);
	assert_string_equal(sback.images_json, st.images_json);
	assert_int_equal(sback.images_pruned, 2);
	api_status_release(&sback);
	expect_refused(MSG_STATUS, out.data, "images.list", json_string("x"),
		       NULL);
	api_status_release(&st);
	buf_release(&out);
	buf_release(&err);
}

static void test_status_round_trip(void **state)
{
	struct api_status s;
	struct buf err = BUF_INIT, again = BUF_INIT;
	char *text = build_status_text();
	const struct api_report *r;

	(void)state;
	assert_non_null(strstr(text, "\"exit_code\":null,\"signal\":null,"
				     "\"exited_ms\":null"));
	assert_non_null(strstr(text, "\"exit_code\":null,\"signal\":9,"));
	assert_int_equal(api_status_parse(text, strlen(text), &s, &err), 0);
	assert_string_equal(s.boot_id, "b00t");
	assert_int_equal(s.n, 2);
	r = &s.items[0];
	assert_string_equal(r->job_uid, "5e1f0c0ffee0d00d");
	assert_null(s.items[1].job_uid); /* an older agent sends none */
	assert_int_equal(r->phase, API_PHASE_EXITED);
	assert_int_equal(r->started_ms, 1796211299642);
	assert_int_equal(r->n_procs, 3);
	assert_false(r->procs[0].exited);
	assert_true(r->procs[1].exited);
	assert_int_equal(r->procs[1].exit_code, 3);
	assert_int_equal(r->procs[1].signal, 0);
	assert_int_equal(r->procs[2].signal, 9);
	assert_int_equal(r->procs[2].exited_ms, 1796211399652);
	assert_string_equal(r->failure, "ExecuteUserScriptError:\nExitCode 3");
	assert_null(r->error);
	r = &s.items[1];
	assert_int_equal(r->phase, API_PHASE_ERROR);
	assert_int_equal(r->started_ms, 0);
	assert_int_equal(r->n_procs, 0);
	assert_null(r->failure);
	assert_int_equal(api_status_build(&s, &again), 0);
	assert_string_equal(again.data, text);
	api_status_release(&s);
	free(text);
	buf_release(&err);
	buf_release(&again);
}

static void test_status_refused(void **state)
{
	char *text = build_status_text();
	static const char *const required[] = {
		"boot_id",
		"assignments",
		"assignments.0.job",
		"assignments.0.attempt",
		"assignments.0.algo",
		"assignments.0.phase",
		"assignments.0.processes",
		"assignments.0.processes.0.rank",
		"assignments.0.processes.0.pid",
		"assignments.0.processes.0.started_ms",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		expect_refused(MSG_STATUS, text, required[i], NULL, NULL);
	expect_accepted(MSG_STATUS, text, "assignments.0.started_ms", NULL);
	expect_accepted(MSG_STATUS, text, "assignments.0.job_uid", NULL);
	expect_refused(MSG_STATUS, text, "assignments.0.job_uid",
		       json_string("5E1F"), NULL);
	expect_refused(MSG_STATUS, text, "assignments.0.job_uid",
		       json_string(""), NULL);
	expect_refused(MSG_STATUS, text, "assignments.0.job_uid",
		       json_string("0123456789abcdef0123456789abcdef0"), NULL);
	expect_refused(MSG_STATUS, text, "assignments.0.job_uid",
		       json_integer(7), NULL);
	expect_accepted(MSG_STATUS, text, "assignments.0.failure", NULL);
	expect_accepted(MSG_STATUS, text, "assignments.0.processes.0.signal",
			NULL);
	expect_refused(MSG_STATUS, text, "assignments.0.phase",
		       json_string("sleeping"), NULL);
	expect_refused(MSG_STATUS, text, "assignments.0.failure",
		       json_integer(1), NULL);
	expect_refused(MSG_STATUS, text, "assignments.0.error", json_object(),
		       NULL);
	expect_refused(MSG_STATUS, text, "assignments.0.processes", json_null(),
		       NULL);
	expect_refused(MSG_STATUS, text, "assignments.0.processes.0",
		       json_array(), "processes[0]");
	expect_refused(MSG_STATUS, text, "assignments.0.processes.0.pid",
		       json_string("4242"), NULL);
	expect_refused(MSG_STATUS, text, "assignments.0.processes.0.pid",
		       json_integer(0), NULL);
	/* Running: no exit status; exited: exactly one of them. */
	expect_refused(MSG_STATUS, text, "assignments.0.processes.0.exit_code",
		       json_integer(0), "exited_ms");
	expect_refused(MSG_STATUS, text, "assignments.0.processes.1.signal",
		       json_integer(15), "exactly one");
	expect_refused(MSG_STATUS, text, "assignments.0.processes.1.exit_code",
		       json_null(), "exactly one");
	expect_refused(MSG_STATUS, text, "assignments.0.processes.1.exit_code",
		       json_integer(256), NULL);
	expect_refused(MSG_STATUS, text, "assignments.0.processes.1.exited_ms",
		       json_string("now"), NULL);
	free(text);
}

/* ---- register ---- */

static void test_register(void **state)
{
	struct api_register r = { 0 }, p;
	struct buf out = BUF_INIT, again = BUF_INIT, err = BUF_INIT;
	static const char *const required[] = { "host", "version", "boot_id",
						"cpus", "gpus" };
	int64_t h, d;
	size_t i;

	(void)state;
	r.host = xs("node-7");
	r.version = xs("0.1.0");
	r.boot_id = xs("5f0c");
	r.cpus = 16;
	r.gpus = 1;
	r.address = xs("192.168.1.7");
	assert_int_equal(api_register_build(&r, &out), 0);
	assert_string_equal(out.data,
			    "{\"host\":\"node-7\",\"version\":\"0.1.0\","
			    "\"boot_id\":\"5f0c\",\"cpus\":16,\"gpus\":1,"
			    "\"address\":\"192.168.1.7\"}");
	assert_int_equal(api_register_parse(out.data, out.len, &p, &err), 0);
	assert_string_equal(p.host, "node-7");
	assert_int_equal(p.cpus, 16);
	assert_string_equal(p.address, "192.168.1.7");
	assert_int_equal(api_register_build(&p, &again), 0);
	assert_string_equal(again.data, out.data);
	api_register_release(&p);
	api_register_release(&r);
	for (i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		expect_refused(MSG_REGISTER, out.data, required[i], NULL, NULL);
	expect_accepted(MSG_REGISTER, out.data, "address", json_null());
	expect_accepted(MSG_REGISTER, out.data, "address", NULL);
	expect_refused(MSG_REGISTER, out.data, "cpus", json_integer(-1), NULL);
	expect_refused(MSG_REGISTER, out.data, "gpus", json_string("1"), NULL);
	expect_refused(MSG_REGISTER, out.data, "host", json_string(""), NULL);
	expect_refused(MSG_REGISTER, out.data, "address", json_integer(1),
		       NULL);

	buf_reset(&out);
	assert_int_equal(api_register_reply_build(1000, 3000, &out), 0);
	assert_string_equal(out.data,
			    "{\"heartbeat_ms\":1000,\"deadline_ms\":3000}");
	assert_int_equal(
		api_register_reply_parse(out.data, out.len, &h, &d, &err), 0);
	assert_int_equal(h, 1000);
	assert_int_equal(d, 3000);
	expect_refused(MSG_REPLY, out.data, "heartbeat_ms", NULL, NULL);
	expect_refused(MSG_REPLY, out.data, "deadline_ms", NULL, NULL);
	expect_refused(MSG_REPLY, out.data, "deadline_ms", json_integer(0),
		       NULL);
	expect_refused(MSG_REPLY, out.data, "heartbeat_ms", json_real(1.5),
		       NULL);
	buf_release(&out);
	buf_release(&again);
	buf_release(&err);
}

/* ---- logs ---- */

static void test_logs_round_trip(void **state)
{
	struct api_log_batch b, p;
	struct buf out = BUF_INIT, again = BUF_INIT, err = BUF_INIT;
	static const char *const required[] = {
		"lines",	 "lines.0.job",	 "lines.0.attempt",
		"lines.0.algo",	 "lines.0.rank", "lines.0.stream",
		"lines.0.ts_ms", "lines.0.text",
	};
	size_t i;

	(void)state;
	make_lines(&b, 3);
	assert_int_equal(api_log_batch_build(&b, &out), 0);
	assert_int_equal(api_log_batch_parse(out.data, out.len, &p, &err), 0);
	assert_int_equal(p.n, 3);
	assert_string_equal(p.lines[0].text, b.lines[0].text);
	assert_false(p.lines[0].is_stderr);
	assert_true(p.lines[1].is_stderr);
	assert_int_equal(p.lines[2].ts_ms, 1796211299644);
	assert_int_equal(api_log_batch_build(&p, &again), 0);
	assert_string_equal(again.data, out.data);
	api_log_batch_release(&p);
	for (i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		expect_refused(MSG_LOGS, out.data, required[i], NULL, NULL);
	expect_refused(MSG_LOGS, out.data, "lines.0.stream",
		       json_string("stdin"), NULL);
	expect_refused(MSG_LOGS, out.data, "lines.0.text", json_null(), NULL);
	expect_refused(MSG_LOGS, out.data, "lines.0.ts_ms", json_real(1.0),
		       NULL);
	expect_refused(MSG_LOGS, out.data, "lines.0", json_string("hi"),
		       "lines[0]");
	/* A batch's name: boot_id and seq, kept across the round trip. */
	b.boot_id = xs("0f2c9d1e-0000-4000-8000-000000000001");
	b.seq = 42;
	buf_reset(&out);
	assert_int_equal(api_log_batch_build(&b, &out), 0);
	assert_int_equal(api_log_batch_parse(out.data, out.len, &p, &err), 0);
	assert_string_equal(p.boot_id, b.boot_id);
	assert_int_equal(p.seq, 42);
	api_log_batch_release(&p);
	expect_refused(MSG_LOGS, out.data, "seq", json_integer(0), NULL);
	expect_refused(MSG_LOGS, out.data, "boot_id", json_string(""), NULL);
	api_log_batch_release(&b);
	buf_release(&out);
	buf_release(&again);
	buf_release(&err);
}

static void test_logs_limit(void **state)
{
	struct api_log_batch b, p;
	struct buf out = BUF_INIT, err = BUF_INIT;

	(void)state;
	make_lines(&b, API_PROTO_MAX_LOG_LINES);
	assert_int_equal(api_log_batch_build(&b, &out), 0);
	assert_int_equal(api_log_batch_parse(out.data, out.len, &p, &err), 0);
	assert_int_equal(p.n, API_PROTO_MAX_LOG_LINES);
	api_log_batch_release(&p);
	api_log_batch_release(&b);

	buf_reset(&out);
	make_lines(&b, API_PROTO_MAX_LOG_LINES + 1);
	assert_int_equal(api_log_batch_build(&b, &out), 0);
	assert_int_equal(api_log_batch_parse(out.data, out.len, &p, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "lines"));
	assert_non_null(strstr(err.data, "0..10000"));
	assert_null(p.lines);
	api_log_batch_release(&b);
	buf_release(&out);
	buf_release(&err);
}

/*
 * Decision: text on the wire is valid UTF-8 without NUL, always. The parser
 * refuses a body that breaks this (jansson decodes every byte), the builder
 * refuses to produce one, and api_utf8_sanitize() is how an agent gets
 * there from a child's raw bytes.
 */
static void test_logs_utf8(void **state)
{
	static const char bad_body[] =
		"{\"lines\":[{\"job\":\"j\",\"attempt\":1,\"algo\":\"algo-1\","
		"\"rank\":0,\"stream\":\"stdout\",\"ts_ms\":1,"
		"\"text\":\"ok \xff\xfe bad\"}]}";
	static const char nul_body[] =
		"{\"lines\":[{\"job\":\"j\",\"attempt\":1,\"algo\":\"algo-1\","
		"\"rank\":0,\"stream\":\"stdout\",\"ts_ms\":1,"
		"\"text\":\"a\\u0000b\"}]}";
	static const char surrogate_body[] =
		"{\"lines\":[{\"job\":\"j\",\"attempt\":1,\"algo\":\"algo-1\","
		"\"rank\":0,\"stream\":\"stdout\",\"ts_ms\":1,"
		"\"text\":\"\\ud800\"}]}";
	static const char raw[] = "ok \xff\xfe bad \xe2\x82 end \xed\xa0\x80 "
				  "\xc0\xaf \xf4\x90\x80\x80 \xe2\x9c\x93";
	struct api_log_batch b, p;
	struct buf out = BUF_INIT, err = BUF_INIT, clean = BUF_INIT;

	(void)state;
	assert_int_equal(parse_any(MSG_LOGS, bad_body, sizeof(bad_body) - 1,
				   &err),
			 ERR_INVALID);
	buf_reset(&err);
	assert_int_equal(parse_any(MSG_LOGS, nul_body, sizeof(nul_body) - 1,
				   &err),
			 ERR_INVALID);
	buf_reset(&err);
	assert_int_equal(parse_any(MSG_LOGS, surrogate_body,
				   sizeof(surrogate_body) - 1, &err),
			 ERR_INVALID);

	make_lines(&b, 1);
	free(b.lines[0].text);
	b.lines[0].text = xs(raw);
	assert_int_equal(api_log_batch_build(&b, &out), ERR_INVALID);

	/* One U+FFFD per maximal invalid subpart, as Python counts them. */
	assert_int_equal(api_utf8_sanitize(raw, sizeof(raw) - 1, &clean), 0);
	assert_string_equal(clean.data,
			    "ok \xef\xbf\xbd\xef\xbf\xbd bad \xef\xbf\xbd end "
			    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
			    "\xef\xbf\xbd\xef\xbf\xbd "
			    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
			    "\xe2\x9c\x93");
	buf_reset(&clean);
	assert_int_equal(api_utf8_sanitize("a\0b", 3, &clean), 0);
	assert_string_equal(clean.data, "a\xef\xbf\xbd"
					"b");
	free(b.lines[0].text);
	b.lines[0].text = buf_detach(&clean, NULL);
	buf_reset(&out);
	assert_int_equal(api_log_batch_build(&b, &out), 0);
	buf_reset(&err);
	assert_int_equal(api_log_batch_parse(out.data, out.len, &p, &err), 0);
	assert_string_equal(p.lines[0].text, b.lines[0].text);
	api_log_batch_release(&p);
	api_log_batch_release(&b);
	buf_release(&out);
	buf_release(&err);
	buf_release(&clean);
}

/* ---- everything else ---- */

static void test_builder_refusals(void **state)
{
	struct api_work w;
	struct buf out = BUF_INIT;

	(void)state;
	full_work(&w);
	free(w.items[0].resource_config_json);
	w.items[0].resource_config_json = xs("[1, 2]");
	assert_int_equal(api_work_build(&w, &out), ERR_INVALID);
	free(w.items[0].resource_config_json);
	w.items[0].resource_config_json = xs("{\"a\":");
	buf_reset(&out);
	assert_int_equal(api_work_build(&w, &out), ERR_INVALID);
	free(w.items[0].resource_config_json);
	w.items[0].resource_config_json = NULL; /* builds {} */
	free(w.items[0].algo);
	w.items[0].algo = xs("algo-\xff");
	buf_reset(&out);
	assert_int_equal(api_work_build(&w, &out), ERR_INVALID);
	api_work_release(&w);

	/* A capped buffer gives ERR_TOOBIG. */
	full_work(&w);
	buf_release(&out);
	buf_init(&out, 64);
	assert_int_equal(api_work_build(&w, &out), ERR_TOOBIG);
	api_work_release(&w);
	buf_release(&out);
}

static void test_hostile(void **state)
{
	static const char *const bodies[] = {
		"",
		"   ",
		"[]",
		"null",
		"\"x\"",
		"{",
		"{\"version\":1,\"assignments\":[{}]}",
		"{\"version\":1e400}",
		"{\"a\":1,\"a\":2}",
		"{\"lines\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]"
		"]]]]]]]]]]]]]]]]]]]]]}",
		"{\"version\":9223372036854775808,\"assignments\":[]}",
		"{\"boot_id\":\"x\",\"assignments\":[null]}",
	};
	struct buf err = BUF_INIT;
	size_t i;
	int m;

	(void)state;
	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
		for (m = MSG_WORK; m <= MSG_LOGS; m++) {
			buf_reset(&err);
			assert_int_equal(parse_any((enum msg)m, bodies[i],
						   strlen(bodies[i]), &err),
					 ERR_INVALID);
			assert_true(err.len > 0);
		}
	buf_release(&err);
}

static void test_names(void **state)
{
	enum api_phase p;
	enum api_action a;
	int i;

	(void)state;
	for (i = API_PHASE_PREPARING; i <= API_PHASE_ERROR; i++) {
		assert_int_equal(api_phase_parse(api_phase_name(i), &p), 0);
		assert_int_equal(p, i);
	}
	assert_string_equal(api_phase_name(API_PHASE_DOWNLOADING),
			    "downloading");
	assert_int_equal(api_phase_parse("Running", &p), ERR_INVALID);
	assert_string_equal(api_phase_name((enum api_phase)99), "unknown");
	for (i = API_ACTION_RUN; i <= API_ACTION_ABORT; i++) {
		assert_int_equal(api_action_parse(api_action_name(i), &a), 0);
		assert_int_equal(a, i);
	}
	assert_int_equal(api_action_parse("kill", &a), ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_work_round_trip),
		cmocka_unit_test(test_work_doc_example),
		cmocka_unit_test(test_work_missing),
		cmocka_unit_test(test_work_types),
		cmocka_unit_test(test_work_limits),
		cmocka_unit_test(test_containers),
		cmocka_unit_test(test_status_round_trip),
		cmocka_unit_test(test_status_refused),
		cmocka_unit_test(test_register),
		cmocka_unit_test(test_logs_round_trip),
		cmocka_unit_test(test_logs_limit),
		cmocka_unit_test(test_logs_utf8),
		cmocka_unit_test(test_builder_refusals),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
