/*
 * Tests api/cwmetrics.c and api/cwmetrics_wire.c: CloudWatch metrics
 * requests in the query (form), JSON 1.0 and RPC v2 CBOR forms, what is
 * refused and with which code, and the answers' shapes (XML members,
 * ExtendedStatistics entries, error bodies).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <cbor.h>

#include "api/cwmetrics.h"
#include "common/buf.h"
#include "common/err.h"

#define FORM_BASE                                       \
	"Action=GetMetricStatistics&Version=2010-08-01" \
	"&Namespace=%2Faws%2Fsagemaker%2FTrainingJobs"  \
	"&MetricName=train%3Aloss"                      \
	"&Dimensions.member.1.Name=TrainingJobName"     \
	"&Dimensions.member.1.Value=job-1"              \
	"&StartTime=2026-01-01T00%3A00%3A00Z"           \
	"&EndTime=2026-01-01T01%3A00%3A00.500Z"

/* A GetMetricStatistics form must be refused with code, naming mention. */
static void stats_refused(enum api_cwm_proto proto, const char *body,
			  const char *code, const char *mention)
{
	struct api_cwm_stats_req r;
	struct buf err = BUF_INIT;
	const char *got = NULL;

	assert_int_equal(api_cwm_stats_req_parse(proto, body, strlen(body), &r,
						 &got, &err),
			 ERR_INVALID);
	if (!got || strcmp(got, code) || !strstr(err.data, mention))
		fail_msg("'%s': got %s '%s', expected %s naming '%s'", body,
			 got ? got : "(none)", err.data, code, mention);
	buf_release(&err);
}

static void test_form_stats(void **state)
{
	struct api_cwm_stats_req r;
	struct buf err = BUF_INIT;
	const char *code = NULL;
	enum api_cwm_op op;
	const char *body = FORM_BASE "&Period=20&Statistics.member.1=Sum"
				     "&Statistics.member.2=Maximum";

	(void)state;
	assert_int_equal(api_cwm_action(API_CWM_QUERY, body, strlen(body), &op,
					&code, &err),
			 0);
	assert_int_equal(op, API_CWM_GET_STATISTICS);
	assert_int_equal(api_cwm_stats_req_parse(API_CWM_QUERY, body,
						 strlen(body), &r, &code, &err),
			 0);
	assert_string_equal(r.m.ns, "/aws/sagemaker/TrainingJobs");
	assert_string_equal(r.m.name, "train:loss");
	assert_int_equal(r.m.n_dims, 1);
	assert_string_equal(r.m.dims[0].value, "job-1");
	assert_int_equal(r.start_ms, 1767225600000LL);
	assert_int_equal(r.end_ms, 1767225600000LL + 3600500);
	assert_int_equal(r.period, 20);
	assert_int_equal(r.stats,
			 (1u << API_CWM_SUM) | (1u << API_CWM_MAXIMUM));
	assert_int_equal(r.n_ext, 0);
	api_cwm_stats_req_release(&r);
	buf_release(&err);
}

static void test_form_refused(void **state)
{
	(void)state;
	stats_refused(API_CWM_QUERY,
		      FORM_BASE "&Period=7&Statistics.member.1=Sum",
		      "InvalidParameterValue", "Period");
	stats_refused(API_CWM_QUERY,
		      FORM_BASE "&Period=0&Statistics.member.1=Sum",
		      "InvalidParameterValue", "Period");
	stats_refused(API_CWM_QUERY,
		      FORM_BASE "&Period=x&Statistics.member.1=Sum",
		      "InvalidParameterValue", "Period");
	stats_refused(API_CWM_QUERY, FORM_BASE "&Statistics.member.1=Sum",
		      "MissingParameter", "Period");
	stats_refused(API_CWM_QUERY, FORM_BASE "&Period=60", "MissingParameter",
		      "Statistics");
	stats_refused(API_CWM_QUERY,
		      FORM_BASE "&Period=60&Statistics.member.1=Sum"
				"&ExtendedStatistics.member.1=p90",
		      "InvalidParameterCombination", "mutually exclusive");
	stats_refused(API_CWM_QUERY,
		      FORM_BASE "&Period=60&ExtendedStatistics.member.1=p100.5",
		      "InvalidParameterValue", "p100.5");
	stats_refused(API_CWM_QUERY,
		      FORM_BASE "&Period=60&ExtendedStatistics.member.1=tm90",
		      "InvalidParameterValue", "tm90");
	/* 3601 seconds at period 1: one datapoint too many... and more. */
	stats_refused(API_CWM_QUERY,
		      FORM_BASE "&Period=1&Statistics.member.1=Sum",
		      "InvalidParameterCombination", "1440");
	/* Lists must not have holes, names not repeat, escapes be whole. */
	stats_refused(API_CWM_QUERY,
		      FORM_BASE "&Period=60&Statistics.member.2=Sum",
		      "InvalidParameterValue", "member");
	stats_refused(API_CWM_QUERY,
		      FORM_BASE "&Period=60&Period=60&Statistics.member.1=Sum",
		      "InvalidParameterValue", "twice");
	stats_refused(API_CWM_QUERY,
		      FORM_BASE "&Period=6%&Statistics.member.1=Sum",
		      "InvalidParameterValue", "encoding");
	stats_refused(API_CWM_QUERY,
		      FORM_BASE "&Period=60&Statistics.member.0=Sum",
		      "InvalidParameterValue", "malformed");
	stats_refused(API_CWM_QUERY,
		      FORM_BASE "&Period=60&Statistics.member.1=Sum"
				"&a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r=1",
		      "InvalidParameterValue", "deep");
	stats_refused(API_CWM_QUERY,
		      FORM_BASE
		      "&Period=60&Statistics.member.1=Sum"
		      "&Statistics.member.2=Sum&Statistics.member.3=Sum"
		      "&Statistics.member.4=Sum&Statistics.member.5=Sum"
		      "&Statistics.member.6=Sum",
		      "InvalidParameterValue", "greater than 5");
	stats_refused(API_CWM_QUERY,
		      FORM_BASE
		      "&Period=60&Statistics.member.1=Sum&Unit=Parsecs",
		      "InvalidParameterValue", "Unit");
}

static void test_json_stats(void **state)
{
	struct api_cwm_stats_req r;
	struct buf err = BUF_INIT;
	const char *code = NULL;
	const char *body = "{\"Namespace\":\"/aws/sagemaker/TrainingJobs\","
			   "\"MetricName\":\"m\",\"StartTime\":1767225600,"
			   "\"EndTime\":1767229200.5,\"Period\":300,"
			   "\"ExtendedStatistics\":[\"p99.9\",\"p0\"]}";

	(void)state;
	assert_int_equal(api_cwm_stats_req_parse(API_CWM_JSON, body,
						 strlen(body), &r, &code, &err),
			 0);
	assert_int_equal(r.n_ext, 2);
	assert_string_equal(r.ext[0], "p99.9");
	assert_true(r.pct[0] > 99.89 && r.pct[0] < 99.91);
	assert_int_equal(r.end_ms, 1767229200500LL);
	api_cwm_stats_req_release(&r);
	stats_refused(API_CWM_JSON,
		      "{\"Namespace\":\"n\",\"MetricName\":\"m\","
		      "\"StartTime\":2,\"EndTime\":1,"
		      "\"Period\":60,\"Statistics\":[\"Sum\"]}",
		      "InvalidParameterValue", "StartTime");
	stats_refused(API_CWM_JSON, "{\"Namespace\":\"n\",\"MetricName\":5}",
		      "InvalidParameterValue", "MetricName");
	stats_refused(API_CWM_JSON, "[1]", "InvalidParameterValue", "object");
	buf_release(&err);
}

/* GetMetricData as JSON: refused with code, naming mention. */
static void data_refused(const char *queries, const char *code,
			 const char *mention)
{
	struct api_cwm_data_req r;
	struct buf body = BUF_INIT, err = BUF_INIT;
	const char *got = NULL;

	(void)buf_addf(&body,
		       "{\"MetricDataQueries\":%s,\"StartTime\":1,"
		       "\"EndTime\":100}",
		       queries);
	assert_int_equal(api_cwm_data_req_parse(API_CWM_JSON, body.data,
						body.len, &r, &got, &err),
			 ERR_INVALID);
	if (!got || strcmp(got, code) || !strstr(err.data, mention))
		fail_msg("%s: got %s '%s', expected %s naming '%s'", queries,
			 got ? got : "(none)", err.data, code, mention);
	buf_release(&body);
	buf_release(&err);
}

#define MS(id, stat)                                                    \
	"{\"Id\":\"" id "\",\"MetricStat\":{\"Metric\":{\"Namespace\":" \
	"\"n\",\"MetricName\":\"m\"},\"Period\":60,\"Stat\":\"" stat "\"}}"

static void test_data(void **state)
{
	struct api_cwm_data_req r;
	struct buf err = BUF_INIT;
	const char *code = NULL;
	const char *body = "{\"MetricDataQueries\":[" MS("a", "p50") "," MS(
		"b", "Sum") "],\"StartTime\":1,\"EndTime\":100,"
			    "\"ScanBy\":\"TimestampAscending\","
			    "\"MaxDatapoints\":10}";

	(void)state;
	assert_int_equal(api_cwm_data_req_parse(API_CWM_JSON, body,
						strlen(body), &r, &code, &err),
			 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.q[0].stat, -1);
	assert_true(r.q[0].pct == 50.0);
	assert_int_equal(r.q[1].stat, API_CWM_SUM);
	assert_int_equal(r.q[1].return_data, 1);
	assert_int_equal(r.ascending, 1);
	assert_int_equal(r.max_datapoints, 10);
	api_cwm_data_req_release(&r);
	buf_release(&err);

	data_refused("[{\"Id\":\"e\",\"Expression\":\"SUM(METRICS())\"}]",
		     "InvalidParameterValue", "Expression");
	data_refused("[" MS("a", "Sum") "," MS("a", "Sum") "]",
		     "InvalidParameterValue", "unique");
	data_refused("[" MS("A", "Sum") "]", "InvalidParameterValue", "Id");
	data_refused("[" MS("a", "Median") "]", "InvalidParameterValue",
		     "Median");
	data_refused("[]", "MissingParameter", "MetricDataQueries");
	data_refused("[{\"Id\":\"a\"}]", "MissingParameter", "MetricStat");
}

static void test_cbor(void **state)
{
	struct api_cwm_list_req r;
	struct api_cwm_stats_req s;
	struct buf err = BUF_INIT;
	const char *code = NULL;
	cbor_item_t *map = cbor_new_definite_map(4);
	unsigned char *data = NULL;
	size_t size = 0, n;
	struct cbor_pair p;
	static const char garbage[] = "\xbf\x61";
	static const char huge[] = "\xba\xff\xff\xff\xff\x61m";

	(void)state;
	p.key = cbor_move(cbor_build_string("Namespace"));
	p.value = cbor_move(cbor_build_string("/aws/sagemaker/TrainingJobs"));
	assert_true(cbor_map_add(map, p));
	p.key = cbor_move(cbor_build_string("MetricName"));
	p.value = cbor_move(cbor_build_string("m"));
	assert_true(cbor_map_add(map, p));
	p.key = cbor_move(cbor_build_string("StartTime"));
	p.value = cbor_move(
		cbor_build_tag(1, cbor_move(cbor_build_float8(1767225600.0))));
	assert_true(cbor_map_add(map, p));
	p.key = cbor_move(cbor_build_string("EndTime"));
	p.value = cbor_move(
		cbor_build_tag(1, cbor_move(cbor_build_uint32(1767229200))));
	assert_true(cbor_map_add(map, p));
	n = cbor_serialize_alloc(map, &data, &size);
	cbor_decref(&map);
	assert_true(n > 0);
	assert_int_equal(api_cwm_list_req_parse(API_CWM_CBOR, (char *)data, n,
						&r, &code, &err),
			 0);
	assert_string_equal(r.metric, "m");
	api_cwm_list_req_release(&r);
	/* Period and a statistic are missing. */
	assert_int_equal(api_cwm_stats_req_parse(API_CWM_CBOR, (char *)data, n,
						 &s, &code, &err),
			 ERR_INVALID);
	assert_string_equal(code, "MissingParameter");
	free(data);
	assert_int_equal(api_cwm_list_req_parse(API_CWM_CBOR, garbage,
						sizeof(garbage) - 1, &r, &code,
						&err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "CBOR"));
	/* A map claiming four billion members is refused, not allocated. */
	buf_reset(&err);
	assert_int_equal(api_cwm_list_req_parse(API_CWM_CBOR, huge,
						sizeof(huge) - 1, &r, &code,
						&err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "claims more members"));
	buf_release(&err);
}

static void test_answers(void **state)
{
	struct api_cwm_stats_req r;
	struct api_cwm_datapoint dp;
	struct buf out = BUF_INIT, err = BUF_INIT;
	const char *code = NULL;
	const char *body = "{\"Namespace\":\"n\",\"MetricName\":\"a<b\","
			   "\"StartTime\":1,\"EndTime\":100,\"Period\":60,"
			   "\"ExtendedStatistics\":[\"p90\"]}";

	(void)state;
	assert_int_equal(api_cwm_stats_req_parse(API_CWM_JSON, body,
						 strlen(body), &r, &code, &err),
			 0);
	memset(&dp, 0, sizeof(dp));
	dp.ts_ms = 1767225600000LL;
	dp.ext[0] = 0.1;
	assert_int_equal(api_cwm_stats_build(API_CWM_QUERY, &r, &dp, 1, "rid-1",
					     &out),
			 0);
	assert_non_null(strstr(out.data, "<Label>a&lt;b</Label>"));
	assert_non_null(strstr(out.data,
			       "<Datapoints><member><Timestamp>"
			       "2026-01-01T00:00:00.000Z</Timestamp>"));
	assert_non_null(strstr(out.data, "<ExtendedStatistics><entry><key>p90"
					 "</key><value>0.1</value></entry>"));
	assert_non_null(strstr(out.data, "<RequestId>rid-1</RequestId>"));
	buf_reset(&out);
	assert_int_equal(api_cwm_stats_build(API_CWM_JSON, &r, &dp, 1, "rid-1",
					     &out),
			 0);
	assert_non_null(
		strstr(out.data, "\"ExtendedStatistics\":{\"p90\":0.1}"));
	assert_non_null(strstr(out.data, "\"Timestamp\":1767225600"));
	api_cwm_stats_req_release(&r);
	buf_reset(&out);
	assert_int_equal(api_cwm_error_build(API_CWM_QUERY, "MissingParameter",
					     1, "x & y", "rid-2", &out),
			 0);
	assert_non_null(strstr(out.data, "<Error><Type>Sender</Type><Code>"
					 "MissingParameter</Code><Message>x "
					 "&amp; y</Message></Error>"));
	buf_reset(&out);
	assert_int_equal(api_cwm_error_build(API_CWM_JSON, "MissingParameter",
					     1, "m", "rid-2", &out),
			 0);
	assert_non_null(strstr(out.data, "\"__type\":\"com.amazonaws.cloudwatch"
					 "#MissingRequiredParameterException"));
	buf_release(&out);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_form_stats),
		cmocka_unit_test(test_form_refused),
		cmocka_unit_test(test_json_stats),
		cmocka_unit_test(test_data),
		cmocka_unit_test(test_cbor),
		cmocka_unit_test(test_answers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
