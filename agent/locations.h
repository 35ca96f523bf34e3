#ifndef AGENT_LOCATIONS_H
#define AGENT_LOCATIONS_H

/* The locations an assignment's job may name (agent/locations.c). */
#include "api/agent_proto.h"
#include "common/buf.h"

/*
 * Whether the job of s may name uri: it parses, and (when the controller
 * sent "locations") an s3:// one starts with one of the owner's S3
 * prefixes, a file:// one lies under one of the allowed folders once its
 * existing part is resolved. Returns 0, or an error with why saying why.
 */
int agent_uri_allowed(const struct api_assignment *s, const char *uri,
		      struct buf *why);
/* The same for a URI of channel c, err naming the channel and the URI. */
int agent_channel_uri_check(const struct api_assignment *s,
			    const struct api_channel *c, const char *uri,
			    struct buf *err);
/*
 * The same for an object of c's manifest (its prefix joined to a key),
 * which must also have the manifest's own scheme; err names the channel,
 * the manifest and the URI.
 */
int agent_manifest_uri_check(const struct api_assignment *s,
			     const struct api_channel *c, const char *uri,
			     struct buf *err);

#endif
