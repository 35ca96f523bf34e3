/*
 * Storage configuration in servconf.c's three steps: init marks every
 * field unset, the environment and the caller fill fields in, and
 * fill_defaults supplies what is still unset.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "storage/storage.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define MIB (1024LL * 1024)

void stor_config_init(struct stor_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->multipart_threshold = -1;
	cfg->part_size = -1;
	cfg->parallel = -1;
	cfg->max_attempts = -1;
	cfg->retry_base_ms = -1;
	cfg->timeout_s = -1;
	cfg->unpack_max_bytes = -1;
	cfg->unpack_max_entries = -1;
}

void stor_config_set(char **field, const char *value)
{
	free(*field);
	*field = value ? xstrdup(value) : NULL;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* Sets *field from the first of two variables that is set, if unset. */
static void from_env(char **field, const char *a, const char *b)
{
	const char *v = env(a);

	if (!v && b)
		v = env(b);
	if (!*field && v)
		stor_config_set(field, v);
}

static int bytes_from_env(int64_t *field, const char *name, int64_t min,
			  struct buf *err)
{
	const char *v = env(name);
	char *end;
	long long n;

	if (*field >= 0 || !v)
		return 0;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno || *end || n < min) {
		(void)buf_addf(err,
			       "%s='%s': expected a number of bytes >= %lld",
			       name, v, (long long)min);
		return ERR_INVALID;
	}
	*field = n;
	return 0;
}

int stor_config_from_env(struct stor_config *cfg, struct buf *err)
{
	int ret;

	from_env(&cfg->s3_endpoint, "TRAINCTL_S3_ENDPOINT",
		 "AWS_ENDPOINT_URL_S3");
	from_env(&cfg->s3_region, "AWS_REGION", "AWS_DEFAULT_REGION");
	from_env(&cfg->access_key, "AWS_ACCESS_KEY_ID", NULL);
	from_env(&cfg->secret_key, "AWS_SECRET_ACCESS_KEY", NULL);
	from_env(&cfg->session_token, "AWS_SESSION_TOKEN", NULL);
	from_env(&cfg->ca_file, "TRAINCTL_CA_FILE", "AWS_CA_BUNDLE");
	from_env(&cfg->state_dir, "TRAINCTL_STATE_DIR", NULL);
	from_env(&cfg->blob_token, "TRAINCTL_BLOB_TOKEN", "TRAINCTL_TOKEN");
	ret = bytes_from_env(&cfg->part_size, "TRAINCTL_S3_PART_SIZE", 5 * MIB,
			     err);
	if (!ret)
		ret = bytes_from_env(&cfg->multipart_threshold,
				     "TRAINCTL_S3_MULTIPART_THRESHOLD", 0, err);
	return ret;
}

void stor_config_fill_defaults(struct stor_config *cfg)
{
	if (!cfg->s3_region)
		stor_config_set(&cfg->s3_region, "us-east-1");
	if (cfg->multipart_threshold < 0)
		cfg->multipart_threshold = 64 * MIB;
	if (cfg->part_size <= 0)
		cfg->part_size = 32 * MIB;
	if (cfg->parallel <= 0)
		cfg->parallel = 4;
	if (cfg->max_attempts <= 0)
		cfg->max_attempts = 5;
	if (cfg->retry_base_ms < 0)
		cfg->retry_base_ms = 100;
	if (cfg->timeout_s <= 0)
		cfg->timeout_s = 120;
	if (cfg->unpack_max_bytes <= 0)
		cfg->unpack_max_bytes = STOR_UNPACK_MAX_BYTES;
	if (cfg->unpack_max_entries <= 0)
		cfg->unpack_max_entries = STOR_UNPACK_MAX_ENTRIES;
}

void stor_config_release(struct stor_config *cfg)
{
	free(cfg->state_dir);
	free(cfg->blob_url);
	free(cfg->blob_token);
	free(cfg->s3_endpoint);
	free(cfg->s3_region);
	free(cfg->access_key);
	free(cfg->secret_key);
	free(cfg->session_token);
	free(cfg->ca_file);
	free(cfg->fence);
	free(cfg->job);
	free(cfg->amz_date);
	stor_config_init(cfg);
}
