#ifndef CTRL_REGISTRY_H
#define CTRL_REGISTRY_H

/*
 * Container images in registries (docs/containers.md): image references,
 * the registry credentials the controller is configured with
 * (--registry-auth, the containers auth.json format), the registries whose
 * TLS is not verified (--insecure-registry) and the image map
 * (--image-map: TrainingImage patterns run as other images).
 *
 * A job's image is pinned by digest before its first attempt (the
 * manifest's sha256, from one GET of the distribution API), so every host of
 * every attempt runs the same image even when its tag moves, each host pulls a
 * digest at most once, and an image that does not exist fails the job before
 * any host is reserved.
 */
#include <stddef.h>

#include "common/buf.h"

struct ctrl_config;

/* A reference split up: registry/repo[:tag][@digest]. */
struct ctrl_image_ref {
	char *registry; /* "host[:port]"; docker.io when the name has none */
	char *repo;	/* "library/x" for a docker.io name with no '/' */
	char *tag;	/* NULL when only a digest was given */
	char *digest;	/* "sha256:<64 hex>" or NULL */
};

struct ctrl_image_map_entry {
	char *pattern; /* fnmatch(3) pattern over the whole TrainingImage */
	char *image;   /* an image, or an absolute path: a Python that runs
			* the job in script mode (a virtual environment's) */
};

struct ctrl_registry {
	char *auth_file; /* --registry-auth, NULL: none */
	void *auths;	 /* json_t *: its "auths" object */
	char **insecure; /* --insecure-registry HOST[:PORT] */
	size_t n_insecure;
	struct ctrl_image_map_entry *map; /* --image-map, in file order */
	size_t n_map;
};

/*
 * Parses s. Returns 0, or ERR_INVALID with err naming what is wrong.
 * Release with ctrl_image_ref_release().
 */
int ctrl_image_ref_parse(const char *s, struct ctrl_image_ref *out,
			 struct buf *err);
void ctrl_image_ref_release(struct ctrl_image_ref *ref);

/*
 * Reads the files the configuration names and keeps the insecure list.
 * Returns 0, or ERR_INVALID / ERR_IO with err naming the file and the
 * fault (the controller refuses to start).
 */
int ctrl_registry_load(struct ctrl_registry *r, const struct ctrl_config *cfg,
		       struct buf *err);
void ctrl_registry_release(struct ctrl_registry *r);

/* The image (or, starting with '/', the script-mode Python) --image-map
 * runs for TrainingImage image, or NULL. */
const char *ctrl_registry_mapped(const struct ctrl_registry *r,
				 const char *image);

/* Whether registry ("host[:port]") was named by --insecure-registry. */
int ctrl_registry_insecure(const struct ctrl_registry *r, const char *registry);

/*
 * A containers auth.json text holding only registry's entry of
 * --registry-auth (what one job's hosts are handed), or NULL.
 */
char *ctrl_registry_auth_for(const struct ctrl_registry *r,
			     const char *registry);

/*
 * Asks the image's registry for its manifest and returns the image pinned
 * by digest ("registry/repo@sha256:..."), a new string in *pinned.
 * Blocks for up to about 40 s: never call it under a lock. Returns 0, or
 * ERR_NOTFOUND / ERR_AUTH / ERR_IO with err saying what the registry
 * answered (no such image or tag, credentials refused, unreachable).
 */
int ctrl_registry_pin(const struct ctrl_registry *r, const char *image,
		      char **pinned, struct buf *err);

#endif
