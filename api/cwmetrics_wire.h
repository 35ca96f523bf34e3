#ifndef API_CWMETRICS_WIRE_H
#define API_CWMETRICS_WIRE_H

/*
 * The three wire forms of api/cwmetrics.c, internal to api/: each turns a
 * request into the JSON object the JSON 1.0 protocol would have sent, and
 * an answer (that JSON object, times as epoch seconds) into its bytes.
 * Members named Timestamp and Timestamps hold times; a member named
 * ExtendedStatistics is a map. Decoders return 0 with *out a new
 * reference, or ERR_INVALID with err set; emitters 0 or ERR_TOOBIG.
 */
#include <stddef.h>

#include <jansson.h>

#include "common/buf.h"

/*
 * An awsQuery form ("Action=...&A.member.1.B=v"): names split on '.',
 * "member.N" makes lists; every value is a string.
 */
int api__cwm_form_decode(const char *body, size_t len, json_t **out,
			 struct buf *err);

/* <OpResponse xmlns=...><OpResult>...</OpResult><ResponseMetadata>. */
int api__cwm_xml_emit(const char *op, const json_t *v, const char *rid,
		      struct buf *out);

/* <ErrorResponse><Error><Type><Code><Message></Error><RequestId>. */
int api__cwm_xml_error(const char *code, int sender, const char *message,
		       const char *rid, struct buf *out);

/* A CBOR map (RPC v2 CBOR); times (tag 1) become epoch seconds. */
int api__cwm_cbor_decode(const char *body, size_t len, json_t **out,
			 struct buf *err);
int api__cwm_cbor_emit(const json_t *v, struct buf *out);

#endif
