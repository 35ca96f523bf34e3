#ifndef API_FRAMEWORK_H
#define API_FRAMEWORK_H

/*
 * The framework and Python versions a SageMaker framework image asks for
 * (docs/script-mode.md). The SageMaker Python SDK turns an estimator's
 * framework_version and py_version into the image's tag and nothing else
 * (PyTorch(framework_version="1.5.0", py_version="py3") trains on
 * ".../pytorch-training:1.5.0-cpu-py3"), so the tag is where script mode
 * reads them, to say which versions really run and whether they match.
 */

struct api_framework {
	char *name;    /* "PyTorch"; NULL: the image names no framework */
	char *dist;    /* its Python distribution: "torch" */
	char *version; /* "1.5.0" as the tag says; NULL: no version */
	char *python;  /* "py3", "py39"; NULL: not said */
	int strict;    /* refuse a host that cannot give them */
};

/*
 * Fills out from a TrainingImage ("763104351884.dkr.ecr.us-east-1.
 * amazonaws.com/pytorch-training:1.5.0-cpu-py3" -> PyTorch, torch, 1.5.0,
 * py3). Returns 1 when the image's repository is a known framework image
 * (name and dist set; version and python when the tag has them), else 0
 * with out zeroed. Release with api_framework_release().
 */
int api_framework_from_image(const char *image, struct api_framework *out);

void api_framework_copy(struct api_framework *dst,
			const struct api_framework *src);
void api_framework_release(struct api_framework *f);

/*
 * Whether a framework at version have ("1.13.0a0+gitunknown") gives want
 * ("1.5.0"): the same major and minor (the major only when want has no
 * minor). NULL want: anything does; NULL have: nothing does.
 */
int api_framework_version_ok(const char *want, const char *have);

/*
 * Whether Python have ("3.11.2") gives want ("py3": any 3.x; "py39": 3.9;
 * "py310": 3.10). NULL or unreadable want: anything does.
 */
int api_framework_python_ok(const char *want, const char *have);

#endif
