/*
 * Framework versions from image names, and whether a host's versions give
 * them (api/framework.h).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "api/framework.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* SageMaker's framework images, by repository name. */
static const struct {
	const char *repo;
	const char *name;
	const char *dist;
} fw_table[] = {
	{ "pytorch-training", "PyTorch", "torch" },
	{ "sagemaker-pytorch", "PyTorch", "torch" },
	{ "huggingface-pytorch-training", "PyTorch", "torch" },
	{ "tensorflow-training", "TensorFlow", "tensorflow" },
	{ "sagemaker-tensorflow", "TensorFlow", "tensorflow" },
	{ "huggingface-tensorflow-training", "TensorFlow", "tensorflow" },
	{ "mxnet-training", "MXNet", "mxnet" },
	{ "sagemaker-mxnet", "MXNet", "mxnet" },
	{ "sagemaker-scikit-learn", "scikit-learn", "scikit-learn" },
	{ "sagemaker-xgboost", "XGBoost", "xgboost" },
};

/* "1.5.0-cpu-py3" -> "1.5.0" (digits and dots up to the first '-'). */
static char *tag_version(const char *tag)
{
	size_t n = strspn(tag, "0123456789.");

	while (n && tag[n - 1] == '.')
		n--;
	if (!n || !isdigit((unsigned char)tag[0]))
		return NULL;
	return xstrndup(tag, n);
}

/* The "pyNN" part of a tag: "1.5.0-cpu-py3" -> "py3". */
static char *tag_python(const char *tag)
{
	const char *p = tag;

	while ((p = strstr(p, "py")) != NULL) {
		size_t n = strspn(p + 2, "0123456789");

		if ((p == tag || p[-1] == '-') && n &&
		    (p[2 + n] == '\0' || p[2 + n] == '-' || p[2 + n] == '@'))
			return xstrndup(p, 2 + n);
		p += 2;
	}
	return NULL;
}

int api_framework_from_image(const char *image, struct api_framework *out)
{
	const char *last = strrchr(image, '/');
	const char *tag;
	size_t n, i;

	memset(out, 0, sizeof(*out));
	last = last ? last + 1 : image;
	n = strcspn(last, ":@");
	for (i = 0; i < sizeof(fw_table) / sizeof(fw_table[0]); i++)
		if (strlen(fw_table[i].repo) == n &&
		    !strncmp(last, fw_table[i].repo, n))
			break;
	if (i == sizeof(fw_table) / sizeof(fw_table[0]))
		return 0;
	out->name = xstrdup(fw_table[i].name);
	out->dist = xstrdup(fw_table[i].dist);
	if (last[n] != ':')
		return 1;
	tag = last + n + 1;
	out->version = tag_version(tag);
	out->python = tag_python(tag);
	return 1;
}

void api_framework_copy(struct api_framework *dst,
			const struct api_framework *src)
{
	dst->name = src->name ? xstrdup(src->name) : NULL;
	dst->dist = src->dist ? xstrdup(src->dist) : NULL;
	dst->version = src->version ? xstrdup(src->version) : NULL;
	dst->python = src->python ? xstrdup(src->python) : NULL;
	dst->strict = src->strict;
}

void api_framework_release(struct api_framework *f)
{
	free(f->name);
	free(f->dist);
	free(f->version);
	free(f->python);
	memset(f, 0, sizeof(*f));
}

/* Up to two leading numbers of "1.13.0a0": {1, 13}; returns how many. */
static int leading(const char *v, long out[2])
{
	int k = 0;
	char *end;

	while (k < 2 && isdigit((unsigned char)*v)) {
		out[k++] = strtol(v, &end, 10);
		if (*end != '.')
			break;
		v = end + 1;
	}
	return k;
}

int api_framework_version_ok(const char *want, const char *have)
{
	long w[2] = { 0, 0 }, h[2] = { 0, 0 };
	int nw, nh;

	if (!want)
		return 1;
	if (!have)
		return 0;
	nw = leading(want, w);
	nh = leading(have, h);
	if (!nw)
		return !strcmp(want, have);
	if (nh < nw)
		return 0;
	return w[0] == h[0] && (nw < 2 || w[1] == h[1]);
}

int api_framework_python_ok(const char *want, const char *have)
{
	long h[2] = { 0, 0 };
	size_t n;

	if (!want || strncmp(want, "py", 2))
		return 1;
	n = strspn(want + 2, "0123456789");
	if (!n || want[2 + n])
		return 1;
	if (!have || leading(have, h) < 1)
		return 0;
	if (want[2] - '0' != h[0])
		return 0;
	return n == 1 || strtol(want + 3, NULL, 10) == h[1];
}
