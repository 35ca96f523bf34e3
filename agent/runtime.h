#ifndef AGENT_RUNTIME_H
#define AGENT_RUNTIME_H

/*
 * The Python files built into trainagent (runtime/python/, see its
 * README.md), written into a job's folder for its Python ranks
 * (agent/runtime.c).
 */
#include <stddef.h>

#include "common/buf.h"

/* One file; the table is generated at build time by scripts/embed.sh. */
struct agent_runtime_file {
	const char *path; /* relative: "pkg/module.py" */
	const unsigned char *data;
	size_t len;
};

extern const struct agent_runtime_file agent_runtime_files[];
extern const size_t agent_runtime_n_files;

/* The folder under a job folder (or /opt/ml) that holds them. */
#define AGENT_RUNTIME_REL ".trainagent/runtime"

/*
 * Writes every file of the table under dir/AGENT_RUNTIME_REL, unless an
 * earlier call completed there. Returns 1 when the folder holds the files,
 * 0 when the table is empty (nothing to put on PYTHONPATH), or ERR_IO with
 * err saying which file could not be written.
 */
int agent_runtime_write(const char *dir, struct buf *err);

#endif
