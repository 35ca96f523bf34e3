/*
 * libFuzzer harness for the api/ parsers: every request body the network
 * can send goes through one of these.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "api/job_record.h"
#include "api/job_spec.h"
#include "api/requests.h"
#include "common/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *json = (const char *)data;
	struct api_job_spec spec;
	struct api_list_request list;
	struct api_job_record rec;
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	char *name = NULL;
	char *type = NULL;
	char *msg = NULL;

	if (!api_job_spec_parse(json, size, &spec, &err))
		api_job_spec_release(&spec);
	buf_reset(&err);
	if (!api_list_request_parse(json, size, &list, &err))
		api_list_request_release(&list);
	buf_reset(&err);
	if (!api_name_request_parse("DescribeTrainingJobRequest", json, size,
				    &name, &err))
		free(name);
	buf_reset(&err);
	if (!api_job_record_from_json(json, size, &rec, &err)) {
		/* Whatever parsed must serialize again. */
		(void)api_describe_response(&rec, &out);
		api_job_record_release(&rec);
	}
	api_error_parse(json, size, &type, &msg);
	free(type);
	free(msg);
	buf_release(&err);
	buf_release(&out);
	return 0;
}
