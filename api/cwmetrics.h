#ifndef API_CWMETRICS_H
#define API_CWMETRICS_H

/*
 * The CloudWatch metrics subset that reads training job metrics
 * (ListMetrics, GetMetricStatistics, GetMetricData) on the wire protocols
 * of the service model monitoring/2010-08-01: awsQuery (form-encoded POST,
 * XML answers), JSON 1.0 (X-Amz-Target GraniteServiceVersion20100801.*,
 * awsQueryCompatible errors) and Smithy RPC v2 CBOR. Requests become plain
 * structs; parsers return 0, or ERR_INVALID with *code set to the
 * CloudWatch error code (InvalidParameterValue, MissingParameter,
 * InvalidParameterCombination) and err holding its message; on failure
 * there is nothing to release. Members and limits follow the service
 * model; times are epoch milliseconds.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define API_CWM_NAMESPACE_URI "http://monitoring.amazonaws.com/doc/2010-08-01/"
#define API_CWM_TARGET_PREFIX "GraniteServiceVersion20100801."
#define API_CWM_CBOR_PREFIX "/service/GraniteServiceVersion20100801/operation/"

#define API_CWM_MAX_DIMS 30	    /* Dimensions of a metric */
#define API_CWM_MAX_FILTERS 10	    /* Dimensions of ListMetrics */
#define API_CWM_MAX_STATS 5	    /* Statistics */
#define API_CWM_MAX_EXT_STATS 10    /* ExtendedStatistics */
#define API_CWM_MAX_QUERIES 500	    /* MetricDataQueries */
#define API_CWM_MAX_DATAPOINTS 1440 /* GetMetricStatistics answer */

enum api_cwm_proto {
	API_CWM_QUERY, /* awsQuery: form body, XML answers */
	API_CWM_JSON,  /* awsJson1_0 */
	API_CWM_CBOR   /* smithy-rpc-v2-cbor */
};

enum api_cwm_op {
	API_CWM_LIST_METRICS,
	API_CWM_GET_STATISTICS,
	API_CWM_GET_DATA,
	API_CWM_OP_UNKNOWN
};

/* The statistics, as bits of a mask; API_CWM_STAT_EXT: a percentile. */
enum api_cwm_stat {
	API_CWM_SAMPLE_COUNT,
	API_CWM_AVERAGE,
	API_CWM_SUM,
	API_CWM_MINIMUM,
	API_CWM_MAXIMUM,
	API_CWM_N_STATS
};

/* The operation named by a wire name ("GetMetricData"). */
enum api_cwm_op api_cwm_op_of(const char *name, size_t len);
const char *api_cwm_op_name(enum api_cwm_op op);

struct api_cwm_dim {
	char *name;
	char *value; /* NULL: any value (ListMetrics filters only) */
};

/* A metric: namespace, name and dimensions. */
struct api_cwm_metric {
	char *ns;
	char *name;
	struct api_cwm_dim dims[API_CWM_MAX_DIMS];
	size_t n_dims;
};

struct api_cwm_list_req {
	char *ns;     /* NULL: any */
	char *metric; /* NULL: any */
	struct api_cwm_dim dims[API_CWM_MAX_FILTERS];
	size_t n_dims;
	char *next_token;
	int recently_active; /* RecentlyActive PT3H */
};

struct api_cwm_stats_req {
	struct api_cwm_metric m;
	int64_t start_ms; /* inclusive */
	int64_t end_ms;	  /* exclusive */
	int period;	  /* seconds */
	unsigned stats;	  /* bit (1 << enum api_cwm_stat) per statistic */
	char *ext[API_CWM_MAX_EXT_STATS];  /* "p90", as given */
	double pct[API_CWM_MAX_EXT_STATS]; /* their percentiles, 0..100 */
	size_t n_ext;
	char *unit; /* NULL: any */
};

struct api_cwm_query {
	char *id;
	char *label; /* NULL: the metric's name */
	struct api_cwm_metric m;
	int period;
	int stat;   /* enum api_cwm_stat, or -1 for a percentile */
	double pct; /* the percentile when stat is -1 */
	char *unit; /* NULL: any */
	int return_data;
};

struct api_cwm_data_req {
	struct api_cwm_query *q;
	size_t n;
	int64_t start_ms;
	int64_t end_ms;
	char *next_token;
	int ascending; /* ScanBy TimestampAscending */
	long max_datapoints;
};

/*
 * Parses the body of op as proto sends it. For API_CWM_QUERY the body is
 * the form; *op receives its Action (and must be known). Returns 0 or
 * ERR_INVALID (code and err set).
 */
int api_cwm_action(enum api_cwm_proto proto, const char *body, size_t len,
		   enum api_cwm_op *op, const char **code, struct buf *err);
int api_cwm_list_req_parse(enum api_cwm_proto proto, const char *body,
			   size_t len, struct api_cwm_list_req *r,
			   const char **code, struct buf *err);
void api_cwm_list_req_release(struct api_cwm_list_req *r);
int api_cwm_stats_req_parse(enum api_cwm_proto proto, const char *body,
			    size_t len, struct api_cwm_stats_req *r,
			    const char **code, struct buf *err);
void api_cwm_stats_req_release(struct api_cwm_stats_req *r);
int api_cwm_data_req_parse(enum api_cwm_proto proto, const char *body,
			   size_t len, struct api_cwm_data_req *r,
			   const char **code, struct buf *err);
void api_cwm_data_req_release(struct api_cwm_data_req *r);

/* A metric ListMetrics lists: one dimension; nothing owned. */
struct api_cwm_listed {
	const char *ns;
	const char *name;
	const char *dim_name;
	const char *dim_value;
};

/* One period of GetMetricStatistics. */
struct api_cwm_datapoint {
	int64_t ts_ms;
	const char *unit; /* static text; NULL: "None" */
	double v[API_CWM_N_STATS];
	double ext[API_CWM_MAX_EXT_STATS];
};

/* One query's answer of GetMetricData; nothing owned. */
struct api_cwm_result {
	const char *id;
	const char *label;
	const int64_t *ts_ms;
	const double *values;
	size_t n;
	int partial; /* StatusCode PartialData (more on the next page) */
};

/*
 * Answers, written to out as proto wants them (the request id goes into
 * the XML's ResponseMetadata). Return 0 or ERR_TOOBIG.
 */
int api_cwm_list_build(enum api_cwm_proto proto, const struct api_cwm_listed *m,
		       size_t n, const char *next_token, const char *rid,
		       struct buf *out);
int api_cwm_stats_build(enum api_cwm_proto proto,
			const struct api_cwm_stats_req *req,
			const struct api_cwm_datapoint *dp, size_t n,
			const char *rid, struct buf *out);
int api_cwm_data_build(enum api_cwm_proto proto, const struct api_cwm_result *r,
		       size_t n, const char *next_token, const char *rid,
		       struct buf *out);

/*
 * An error answer: code (the CloudWatch code, e.g. InvalidParameterValue),
 * sender (1: the caller's fault, "Sender"; 0: "Receiver"). Returns 0 or
 * ERR_TOOBIG.
 */
int api_cwm_error_build(enum api_cwm_proto proto, const char *code, int sender,
			const char *message, const char *rid, struct buf *out);

/* The message of an AWS JSON error body ({"message": ...}), or NULL. The
 * caller frees it. */
char *api_cwm_json_error_message(const char *json, size_t len);

/* The Content-Type of proto's answers. */
const char *api_cwm_content_type(enum api_cwm_proto proto);

#endif
