#ifndef API_JOB_CONFIG_H
#define API_JOB_CONFIG_H

/*
 * The configuration files a training container finds in
 * /opt/ml/input/config (contract section 4), built from a job's request.
 */
#include <stddef.h>

#include "api/job_spec.h"
#include "common/buf.h"

/* hyperparameters.json: the HyperParameters map exactly as sent. */
int api_config_hyperparameters(const struct api_job_spec *spec,
			       struct buf *out);

/*
 * inputdataconfig.json: {"<channel>": {"ContentType"?, "TrainingInputMode",
 * "S3DistributionType", "RecordWrapperType"}} (FastFile shows as File), of
 * the channels a host of instance group `group` gets (NULL: every channel).
 */
int api_config_input_data(const struct api_job_spec *spec, const char *group,
			  struct buf *out);

/*
 * The InstanceGroupName of the host_index-th host of a job (hosts are
 * numbered group after group, as in resourceconfig.json); NULL without
 * InstanceGroups, or past the last group.
 */
const char *api_config_host_group(const struct api_job_spec *spec,
				  size_t host_index);

/* Whether a host of group (NULL: any) gets channel c (InstanceGroupNames). */
int api_config_channel_on(const struct api_channel *c, const char *group);

/*
 * resourceconfig.json in the full modern format for host number
 * current (0-based) of hosts[0..n): current_host, current_instance_type,
 * current_group_name, hosts, instance_groups, network_interface_name,
 * topology null. With InstanceGroups, hosts are numbered group after group.
 */
int api_config_resource(const struct api_job_spec *spec,
			const char *const *hosts, size_t n, size_t current,
			const char *iface, struct buf *out);

/*
 * A hyperparameter value as the toolkit decodes it when it is a JSON
 * string ("\"train.py\"" -> "train.py"); other values are returned as they
 * are. The result is a new string the caller frees.
 */
char *api_hp_string(const char *value);

#endif
