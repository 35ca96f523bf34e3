#ifndef CTRL_ARTIFACTS_H
#define CTRL_ARTIFACTS_H

#include "common/buf.h"

struct ctrl_ctx;
struct db_assignment;

/*
 * Merges the file (model.tar.gz or output.tar.gz) that each host of an
 * attempt uploaded into one archive, as SageMaker merges every host's
 * /opt/ml/model, and stores it at <output_path>/<job>/output/<file>.
 * Hosts that uploaded nothing are skipped; with no part at all an empty
 * archive is stored. On success *uri_out (may be NULL) receives the URI
 * (caller frees). When warn is given and a file of the same name came
 * from several hosts (the last host's is kept, as SageMaker keeps it),
 * warn receives why: "2 files of the hosts' model files had the same
 * name on several hosts; the last host's was kept: model.pt (algo-2 over
 * algo-1), ...". Returns 0 or an error with err set.
 */
int ctrl_artifacts_collect(struct ctrl_ctx *ctx, const char *job, int attempt,
			   const struct db_assignment *as, size_t n,
			   const char *output_path, const char *file,
			   char **uri_out, struct buf *warn, struct buf *err);

/*
 * OutputDataConfig.CompressionType NONE: the files of every host's
 * model.tar.gz (merged in host order, as ctrl_artifacts_collect() merges
 * them) are stored one by one under <output_path>/<job>/output/model/.
 * On success *uri_out (may be NULL) receives that prefix, with its
 * trailing '/' (caller frees); warn as for ctrl_artifacts_collect().
 * Returns 0 or an error with err set.
 */
int ctrl_artifacts_store_files(struct ctrl_ctx *ctx, const char *job,
			       int attempt, const struct db_assignment *as,
			       size_t n, const char *output_path,
			       char **uri_out, struct buf *warn,
			       struct buf *err);

#endif
