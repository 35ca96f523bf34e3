#ifndef AGENT_FWCHECK_H
#define AGENT_FWCHECK_H

/*
 * Which Python and framework a script-mode job really runs
 * (docs/script-mode.md). Before the first rank of a Python entry point
 * starts, the staging worker asks the job's Python (its virtual
 * environment when requirements.txt made one, else the runtime the
 * controller named) for its version and the installed version of the
 * framework the image's tag names (importlib.metadata: nothing is
 * imported), and says in the job's log which versions run. A request the
 * host cannot give is a warning line, or, when the controller runs with
 * --framework-versions strict, the host's error (a ClientError failure
 * naming both). The same sentence travels in the host's report
 * ("runtime"), for the job's Training transition.
 */
#include "api/agent_proto.h"
#include "common/buf.h"

/* Whether s runs a Python entry point in script mode. */
int agent_fwcheck_wanted(const struct api_assignment *s);

/*
 * Composes the sentence for python_version and framework_version (NULL:
 * not installed) of the Python at path, against what s asks for, into
 * out. Returns 1 when a version asked for is not there, else 0.
 */
int agent_fwcheck_say(const struct api_assignment *s, const char *path,
		      const char *python_version, const char *framework_version,
		      struct buf *out);

/*
 * In the staging worker (fd: its report pipe; dir: the job folder): asks
 * the job's Python and reports "note <sentence>" (the log) and "runtime
 * <sentence>" (the report). Returns 0, or ERR_INVALID with err holding the
 * sentence under --framework-versions strict, or ERR_IO when the Python
 * cannot be run.
 */
int agent_fwcheck_run(const struct api_assignment *s, const char *dir, int fd,
		      struct buf *err);

#endif
