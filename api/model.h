#ifndef API_MODEL_H
#define API_MODEL_H

/*
 * The SageMaker service model as C tables, internal to api/. The tables live
 * in api/model_gen.c, which scripts/gen_model.py writes from botocore's
 * service-2.json (the Debian and the pyenv generations merged); validate.c
 * walks them. Shapes refer to each other by index into api__shapes, which
 * is sorted by name (strcmp order).
 */
#include <stddef.h>

enum api__kind {
	API__STRUCTURE,
	API__LIST,
	API__MAP,
	API__STRING,
	API__INTEGER,
	API__LONG,
	API__FLOAT,
	API__DOUBLE,
	API__BOOLEAN,
	API__TIMESTAMP,
	API__BLOB
};

/* One member of a structure shape. */
struct api__member {
	const char *name;     /* wire name, e.g. "TrainingJobName" */
	const char *path;     /* name in error paths, e.g. "trainingJobName" */
	unsigned short shape; /* index into api__shapes */
	unsigned char required;
};

/* A pattern as the model spells it, and the same rewritten for PCRE2. */
struct api__pattern {
	const char *text;  /* shown in error messages */
	const char *regex; /* what PCRE2 compiles; NULL: same as text */
};

struct api__shape {
	const char *name;
	enum api__kind kind;
	/*
	 * Length (string: code points; list, map: entries) or value (numbers)
	 * bounds, inclusive.
	 */
	unsigned char has_min;
	unsigned char has_max;
	long long min;
	long long max;
	int pattern; /* index into api__patterns, or -1 */
	/* Enum values in model order, NULL-terminated; NULL when none. */
	unsigned short nenums;
	const char *const *enums;
	const unsigned short *enum_sorted; /* indexes of enums, strcmp order */
	/* Structure members. */
	unsigned short nmembers;
	const struct api__member *members;
	/* Indexes into api__shapes, or -1: list element, map key and value. */
	int member;
	int key;
	int value;
};

extern const struct api__shape api__shapes[];
extern const size_t api__nshapes;
extern const struct api__pattern api__patterns[];
extern const size_t api__npatterns;
/* Most shapes nested below any operation's input shape, a recursive shape
 * counted once (validation bounds the nesting below one). */
extern const int api__max_depth;

#endif
