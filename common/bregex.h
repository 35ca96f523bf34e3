#ifndef COMMON_BREGEX_H
#define COMMON_BREGEX_H

/*
 * Bounded regular expressions: every regex a user supplies (metric
 * definitions, log searches) is compiled and matched here, so that no
 * pattern can cost more than a known budget per line.
 *
 * - Compile: PCRE2 with UTF, a pattern of at most BREGEX_PATTERN_MAX
 *   bytes, JIT when the build has it.
 * - Match: PCRE2's own match limit (steps of the matcher, enforced by the
 *   interpreter and by JIT alike), depth limit and heap limit (the
 *   interpreter; JIT runs on its own fixed 32 KiB machine stack and fails
 *   with a stack-limit error instead), and only the first subject_max
 *   bytes of the subject are looked at.
 *
 * A compiled struct bregex is read-only once made: any number of threads
 * may match it at once (each call uses its own match data).
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define BREGEX_PATTERN_MAX 1024

/* What one match may cost. */
struct bregex_limits {
	uint32_t match_limit;	 /* pcre2_set_match_limit */
	uint32_t depth_limit;	 /* pcre2_set_depth_limit */
	uint32_t heap_limit_kib; /* pcre2_set_heap_limit */
	size_t subject_max;	 /* bytes of a subject matched */
};

/*
 * The defaults: 20,000 matcher steps, a backtracking depth of 5,000 and
 * 4 MiB of heap (the interpreter), the first 4 KiB of a subject.
 */
#define BREGEX_MATCH_LIMIT 20000
#define BREGEX_DEPTH_LIMIT 5000
#define BREGEX_HEAP_LIMIT_KIB 4096
#define BREGEX_SUBJECT_MAX 4096
#define BREGEX_LIMITS_INIT                                                     \
	{                                                                      \
		BREGEX_MATCH_LIMIT, BREGEX_DEPTH_LIMIT, BREGEX_HEAP_LIMIT_KIB, \
			BREGEX_SUBJECT_MAX                                     \
	}

enum {
	BREGEX_CASELESS = 1,
	BREGEX_NO_JIT = 2, /* the interpreter only (tests) */
};

/* Results of bregex_match() besides 1 (match) and 0 (no match). */
#define BREGEX_LIMIT (-100) /* a limit was hit: treat as no match */
#define BREGEX_ERROR (-101) /* any other matcher error */

struct bregex;

/*
 * Compiles pattern with the limits lim (NULL: BREGEX_LIMITS_INIT). On
 * failure returns ERR_INVALID with the reason in err and leaves *out NULL.
 */
int bregex_compile(const char *pattern, unsigned flags,
		   const struct bregex_limits *lim, struct bregex **out,
		   struct buf *err);

/* Capturing groups the pattern has. */
uint32_t bregex_groups(const struct bregex *re);

/*
 * Matches the first subject_max bytes of s (len bytes; SIZE_MAX: up to
 * its NUL). Returns 1 on a match and, when group_off is given, the byte
 * range of group 1 (an unset group reads as *group_len 0), 0 on no match,
 * BREGEX_LIMIT when a limit stopped it, BREGEX_ERROR otherwise.
 */
int bregex_match(const struct bregex *re, const char *s, size_t len,
		 size_t *group_off, size_t *group_len);

void bregex_free(struct bregex *re);

#endif
