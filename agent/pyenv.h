#ifndef AGENT_PYENV_H
#define AGENT_PYENV_H

/* requirements.txt into a virtual environment of the job's own (agent/pyenv.c).
 */
#include "api/agent_proto.h"
#include "common/buf.h"

/*
 * 1 when script mode runs a Python program and dir/code has a
 * requirements.txt (after staging unpacked the code).
 */
int agent_pyenv_wanted(const struct api_assignment *s, const char *dir);
/* <base>/.trainagent/scratch/venv, as a new string (yours to free). */
char *agent_pyenv_path(const char *base);
/* 1 when the job folder dir holds an environment made by _install(). */
int agent_pyenv_ready(const char *dir);
/*
 * In the staging worker: creates the environment and installs
 * dir/code/requirements.txt into it with pip, reporting its output on fd.
 * Returns 0, or ERR_IO with err saying what failed and pip's last line.
 */
int agent_pyenv_install(const struct api_assignment *s, const char *dir, int fd,
			struct buf *err);

#endif
