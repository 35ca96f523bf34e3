/* Bounded regular expressions (common/bregex.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "common/bregex.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

struct bregex {
	pcre2_code *code;
	pcre2_match_context *mctx; /* the limits; read-only after compile */
	size_t subject_max;
};

int bregex_compile(const char *pattern, unsigned flags,
		   const struct bregex_limits *lim, struct bregex **out,
		   struct buf *err)
{
	static const struct bregex_limits dflt = BREGEX_LIMITS_INIT;
	struct bregex *re;
	/* Log lines need not be valid UTF-8: such a line is matched, not
	 * refused. */
	uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
	PCRE2_UCHAR msg[160];
	PCRE2_SIZE at = 0;
	int code = 0;

	*out = NULL;
	if (!lim)
		lim = &dflt;
	if (strlen(pattern) > BREGEX_PATTERN_MAX) {
		(void)buf_addf(err, "regular expression longer than %d bytes",
			       BREGEX_PATTERN_MAX);
		return ERR_INVALID;
	}
	if (flags & BREGEX_CASELESS)
		opts |= PCRE2_CASELESS;
	re = xcalloc(1, sizeof(*re));
	re->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
				 opts, &code, &at, NULL);
	if (!re->code) {
		if (pcre2_get_error_message(code, msg, sizeof(msg)) < 0)
			msg[0] = '\0';
		(void)buf_addf(err,
			       "regular expression does not compile at "
			       "offset %zu: %s",
			       (size_t)at, (const char *)msg);
		free(re);
		return ERR_INVALID;
	}
	/* Without JIT support the interpreter runs, under the same limits. */
	if (!(flags & BREGEX_NO_JIT))
		(void)pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);
	re->mctx = pcre2_match_context_create(NULL);
	if (!re->mctx)
		BUG("pcre2 match context");
	pcre2_set_match_limit(re->mctx, lim->match_limit);
	pcre2_set_depth_limit(re->mctx, lim->depth_limit);
	pcre2_set_heap_limit(re->mctx, lim->heap_limit_kib);
	re->subject_max = lim->subject_max;
	*out = re;
	return 0;
}

uint32_t bregex_groups(const struct bregex *re)
{
	uint32_t n = 0;

	(void)pcre2_pattern_info(re->code, PCRE2_INFO_CAPTURECOUNT, &n);
	return n;
}

int bregex_match(const struct bregex *re, const char *s, size_t len,
		 size_t *group_off, size_t *group_len)
{
	pcre2_match_data *md;
	PCRE2_SIZE *ov;
	int rc;

	if (len == SIZE_MAX)
		len = strlen(s);
	if (len > re->subject_max) {
		len = re->subject_max;
		/* Not inside a UTF-8 character. */
		while (len && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;
	}
	/* Two pairs: the whole match and group 1 (rc 0 says more groups
	 * matched than fit, which is fine). */
	md = pcre2_match_data_create(2, NULL);
	if (!md)
		BUG("pcre2 match data");
	rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, 0, 0, md, re->mctx);
	if (rc >= 0) {
		if (group_off && group_len) {
			ov = pcre2_get_ovector_pointer(md);
			if ((rc == 0 || rc >= 2) && ov[2] != PCRE2_UNSET &&
			    ov[3] >= ov[2]) {
				*group_off = ov[2];
				*group_len = ov[3] - ov[2];
			} else {
				*group_off = 0;
				*group_len = 0;
			}
		}
		pcre2_match_data_free(md);
		return 1;
	}
	pcre2_match_data_free(md);
	switch (rc) {
	case PCRE2_ERROR_NOMATCH:
	case PCRE2_ERROR_PARTIAL:
		return 0;
	case PCRE2_ERROR_MATCHLIMIT:
	case PCRE2_ERROR_DEPTHLIMIT:
	case PCRE2_ERROR_HEAPLIMIT:
	case PCRE2_ERROR_JIT_STACKLIMIT:
	case PCRE2_ERROR_NOMEMORY:
		return BREGEX_LIMIT;
	default:
		return BREGEX_ERROR;
	}
}

void bregex_free(struct bregex *re)
{
	if (!re)
		return;
	pcre2_match_context_free(re->mctx);
	pcre2_code_free(re->code);
	free(re);
}
