#!/usr/bin/python3
"""AWS Batch's service-job API (docs/batch.md) driven by unmodified clients:
boto3's `batch` client and `aws batch` (CLI v1), both of the newer
generation (botocore 1.43: Debian's 1.29 predates service jobs). Run by
/usr/bin/python3 (tests/run.sh), this script runs itself again with the
pyenv python3 that has it.

  b1 every object operation round trips (create, describe, list, update)
  b2 the aws CLI v1 creates an environment, a fair-share policy, a queue
     and two quota shares, and submits a service job
  b3 a service job runs to SUCCEEDED (a file:///bin/sh training job)
  b4 TerminateServiceJob -> FAILED with the reason
  b5 refusals: ClientException naming the member, nothing created
  b6 roles: a user key creates no queue, sees and terminates only its jobs,
     submits only to the queues its profile's trainctl_batch_queues names
  b7 clientToken: the same request gives the same jobId; the store's
     batch_sched view holds what a scheduler reads
  b8 ListServiceJobs filters and pages; UpdateServiceJob; deletes refused
     while in use
  b9 a restart of trainctld keeps every object and job

TAP on stdout.
"""
import json
import os
import subprocess
import sys
import time


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import batchlib  # noqa: E402

batchlib.reexec()

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402

sc = fl.sc
sc.hermetic_env()
expect = sc.expect
Fail = sc.Fail

ADMIN = ("AKIDBATCHADMIN000001", "batch/admin/secret/0123456789")
ALICE = ("AKIDBATCHALICE000001", "batch/alice/secret/0123456789")
BOB = ("AKIDBATCHBOB00000001", "batch/bob/secret/01234567890")
REGION = "us-east-1"
ACCOUNT_ARN = "arn:aws:batch:%s:" % REGION


def write_credentials(tmp):
    path = os.path.join(tmp, "credentials")
    with open(path, "w") as f:
        f.write("[ops]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n" % ADMIN)
        for name, (k, s) in (("alice", ALICE), ("bob", BOB)):
            f.write("[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\n"
                    "trainctl_user = %s\ntrainctl_role = user\n"
                    "trainctl_s3_prefixes = %s/\n" % (name, k, s, name, fl.BUCKET))
            # bob may submit to q-fair and q-quota only.
            f.write("trainctl_batch_queues = q-fair, q-quota\n\n" if name == "bob" else "\n")
    return path


def client(cl, key, validate=False):
    return batchlib.client(cl.endpoint, key, REGION, validate)


def payload(cl, name, script="echo batch-ok; exit 0", itype="ml.m5.large", **top):
    path = os.path.join(cl.tmp, "%s.sh" % name)
    with open(path, "w") as f:
        f.write(script + "\n")
    req = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "file:///bin/sh", "TrainingInputMode": "File",
                                   "ContainerArguments": [path]},
        "RoleArn": fl.ROLE,
        "OutputDataConfig": {"S3OutputPath": fl.OUT},
        "ResourceConfig": {"InstanceType": itype, "InstanceCount": 1, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 300},
    }
    req.update(top)
    return json.dumps(req)


def strip(d):
    return {k: v for k, v in d.items() if k != "ResponseMetadata"}


def refused(fn, *contains, code="ClientException"):
    return sc.expect_error(fn, code, contains=list(contains) or None)


# ------------------------------------------------------------------ b1

def case_objects(cl, b):
    env = b.create_service_environment(
        serviceEnvironmentName="env-a", serviceEnvironmentType="SAGEMAKER_TRAINING",
        capacityLimits=[{"maxCapacity": 4, "capacityUnit": "ml.m5.large"}], tags={"team": "ml"})
    expect(env["serviceEnvironmentArn"] == ACCOUNT_ARN + "123456789012:service-environment/env-a"
           or env["serviceEnvironmentArn"].endswith(":service-environment/env-a"), env)
    fair = b.create_scheduling_policy(
        name="fair-a", fairsharePolicy={"shareDecaySeconds": 3600, "computeReservation": 10,
                                        "shareDistribution": [{"shareIdentifier": "vision",
                                                               "weightFactor": 2.0},
                                                              {"shareIdentifier": "nlp"}]},
        tags={"k": "v"})
    quota = b.create_scheduling_policy(name="quota-a",
                                       quotaSharePolicy={"idleResourceAssignmentStrategy": "FIFO"})
    envs = [{"order": 1, "serviceEnvironment": "env-a"}]
    qf = b.create_job_queue(jobQueueName="q-fair", priority=10, jobQueueType="SAGEMAKER_TRAINING",
                            schedulingPolicyArn=fair["arn"], serviceEnvironmentOrder=envs,
                            tags={"team": "ml"})
    b.create_job_queue(jobQueueName="q-quota", priority=5, jobQueueType="SAGEMAKER_TRAINING",
                       schedulingPolicyArn=quota["arn"], serviceEnvironmentOrder=envs)
    b.create_job_queue(jobQueueName="q-plain", priority=1, jobQueueType="SAGEMAKER_TRAINING",
                       serviceEnvironmentOrder=[{"order": 1,
                                                 "serviceEnvironment": env["serviceEnvironmentArn"]}])
    s1 = b.create_quota_share(quotaShareName="vision", jobQueue="q-quota",
                              capacityLimits=[{"maxCapacity": 2, "capacityUnit": "ml.m5.large"}],
                              resourceSharingConfiguration={"strategy": "LEND_AND_BORROW",
                                                            "borrowLimit": 1},
                              preemptionConfiguration={"inSharePreemption": "DISABLED"},
                              tags={"owner": "vision"})
    b.create_quota_share(quotaShareName="nlp", jobQueue="q-quota",
                         capacityLimits=[{"maxCapacity": 2, "capacityUnit": "NUM_INSTANCES"}],
                         resourceSharingConfiguration={"strategy": "RESERVE"},
                         preemptionConfiguration={"inSharePreemption": "ENABLED"})
    d = b.describe_service_environments(serviceEnvironments=["env-a"])["serviceEnvironments"]
    expect(len(d) == 1 and d[0]["status"] == "VALID" and d[0]["state"] == "ENABLED"
           and d[0]["capacityLimits"] == [{"maxCapacity": 4, "capacityUnit": "ml.m5.large"}]
           and d[0]["tags"] == {"team": "ml"}, d)
    d = b.describe_job_queues(jobQueues=["q-fair"])["jobQueues"][0]
    expect(d["jobQueueArn"] == qf["jobQueueArn"] and d["priority"] == 10
           and d["schedulingPolicyArn"] == fair["arn"] and d["jobQueueType"] == "SAGEMAKER_TRAINING"
           and d["serviceEnvironmentOrder"][0]["serviceEnvironment"] == env["serviceEnvironmentArn"]
           and d["tags"] == {"team": "ml"} and d["status"] == "VALID", d)
    all_q = b.describe_job_queues()["jobQueues"]
    expect(sorted(q["jobQueueName"] for q in all_q) == ["q-fair", "q-plain", "q-quota"], all_q)
    p = b.describe_scheduling_policies(arns=[fair["arn"]])["schedulingPolicies"][0]
    expect(p["fairsharePolicy"]["computeReservation"] == 10
           and p["fairsharePolicy"]["shareDistribution"][0] == {"shareIdentifier": "vision",
                                                                "weightFactor": 2.0}
           and p["tags"] == {"k": "v"}, p)
    arns = [x["arn"] for x in b.list_scheduling_policies()["schedulingPolicies"]]
    expect(sorted(arns) == sorted([fair["arn"], quota["arn"]]), arns)
    qs = b.describe_quota_share(quotaShareArn=s1["quotaShareArn"])
    expect(qs["quotaShareName"] == "vision" and qs["resourceSharingConfiguration"]
           == {"strategy": "LEND_AND_BORROW", "borrowLimit": 1} and qs["tags"] == {"owner": "vision"}
           and qs["jobQueueArn"].endswith(":job-queue/q-quota") and qs["status"] == "VALID", qs)
    ls = b.list_quota_shares(jobQueue="q-quota")["quotaShares"]
    expect(sorted(x["quotaShareName"] for x in ls) == ["nlp", "vision"], ls)
    # Updates change the members given, keep the rest.
    b.update_service_environment(serviceEnvironment="env-a",
                                 capacityLimits=[{"maxCapacity": 6, "capacityUnit": "ml.m5.large"}])
    d = b.describe_service_environments(serviceEnvironments=["env-a"])["serviceEnvironments"][0]
    expect(d["capacityLimits"][0]["maxCapacity"] == 6 and d["tags"] == {"team": "ml"}, d)
    b.update_job_queue(jobQueue="q-fair", priority=20, state="DISABLED")
    d = b.describe_job_queues(jobQueues=[qf["jobQueueArn"]])["jobQueues"][0]
    expect(d["priority"] == 20 and d["state"] == "DISABLED"
           and d["schedulingPolicyArn"] == fair["arn"], d)
    b.update_job_queue(jobQueue="q-fair", state="ENABLED")
    b.update_scheduling_policy(arn=fair["arn"], fairsharePolicy={"shareDecaySeconds": 60,
                                                                  "computeReservation": 0})
    p = b.describe_scheduling_policies(arns=[fair["arn"]])["schedulingPolicies"][0]
    expect(p["fairsharePolicy"]["shareDecaySeconds"] == 60, p)
    b.update_scheduling_policy(arn=fair["arn"], fairsharePolicy={
        "shareDecaySeconds": 60, "shareDistribution": [{"shareIdentifier": "vision"},
                                                       {"shareIdentifier": "nlp"}]})
    b.update_quota_share(quotaShareArn=s1["quotaShareArn"],
                         resourceSharingConfiguration={"strategy": "LEND"}, state="DISABLED")
    qs = b.describe_quota_share(quotaShareArn=s1["quotaShareArn"])
    expect(qs["resourceSharingConfiguration"] == {"strategy": "LEND"} and qs["state"] == "DISABLED"
           and qs["capacityLimits"][0]["maxCapacity"] == 2, qs)
    b.update_quota_share(quotaShareArn=s1["quotaShareArn"], state="ENABLED")
    return {"env": env, "fair": fair, "quota": quota, "share": s1}


# ------------------------------------------------------------------ b2

def aws(cl, key, *args):
    env = dict(os.environ)
    env.update({"AWS_ACCESS_KEY_ID": key[0], "AWS_SECRET_ACCESS_KEY": key[1],
                "AWS_DEFAULT_REGION": REGION, "AWS_CONFIG_FILE": "/dev/null",
                "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_EC2_METADATA_DISABLED": "true"})
    env.pop("AWS_PROFILE", None)
    exe = os.path.join(os.path.dirname(os.environ.get("TRAINCTL_BATCH_PY", sys.executable)), "aws")
    if not os.access(exe, os.X_OK):
        exe = "aws"
    p = subprocess.run([exe, "--endpoint-url", cl.endpoint, "--output", "json", "batch"] + list(args),
                       capture_output=True, text=True, env=env, timeout=120)
    expect(p.returncode == 0, "aws batch %s: exit %d: %s" % (args[0], p.returncode, p.stderr[-600:]))
    return json.loads(p.stdout) if p.stdout.strip() else {}


def case_cli(cl, b):
    ver = subprocess.run(["aws", "--version"], capture_output=True, text=True).stdout + \
        subprocess.run(["aws", "--version"], capture_output=True, text=True).stderr
    expect(ver.startswith("aws-cli/1."), "the aws on PATH is not CLI v1: %r" % ver)
    aws(cl, ADMIN, "create-service-environment", "--service-environment-name", "cli-env",
        "--service-environment-type", "SAGEMAKER_TRAINING",
        "--capacity-limits", "maxCapacity=2,capacityUnit=NUM_INSTANCES")
    fair = aws(cl, ADMIN, "create-scheduling-policy", "--name", "cli-fair", "--fairshare-policy",
               json.dumps({"shareDecaySeconds": 600, "shareDistribution":
                           [{"shareIdentifier": "a", "weightFactor": 1.0}]}))
    quota = aws(cl, ADMIN, "create-scheduling-policy", "--name", "cli-quota", "--quota-share-policy",
                "idleResourceAssignmentStrategy=FIFO")
    aws(cl, ADMIN, "create-job-queue", "--job-queue-name", "cli-fair-q", "--priority", "1",
        "--job-queue-type", "SAGEMAKER_TRAINING", "--scheduling-policy-arn", fair["arn"],
        "--service-environment-order", "order=1,serviceEnvironment=cli-env")
    q = aws(cl, ADMIN, "create-job-queue", "--job-queue-name", "cli-q", "--priority", "1",
            "--job-queue-type", "SAGEMAKER_TRAINING", "--scheduling-policy-arn", quota["arn"],
            "--service-environment-order", "order=1,serviceEnvironment=cli-env")
    for name in ("team-a", "team-b"):
        aws(cl, ADMIN, "create-quota-share", "--quota-share-name", name, "--job-queue", "cli-q",
            "--capacity-limits", "maxCapacity=1,capacityUnit=NUM_INSTANCES",
            "--resource-sharing-configuration", "strategy=LEND_AND_BORROW,borrowLimit=-1",
            "--preemption-configuration", "inSharePreemption=DISABLED")
    ls = aws(cl, ADMIN, "list-quota-shares", "--job-queue", q["jobQueueArn"])["quotaShares"]
    expect(sorted(x["quotaShareName"] for x in ls) == ["team-a", "team-b"], ls)
    sub = aws(cl, ADMIN, "submit-service-job", "--job-name", "cli-job", "--job-queue", "cli-q",
              "--service-job-type", "SAGEMAKER_TRAINING", "--quota-share-name", "team-a",
              "--service-request-payload", payload(cl, "cli-job-tj"))
    d = b.describe_service_job(jobId=sub["jobId"])
    expect(d["jobName"] == "cli-job" and d["quotaShareName"] == "team-a"
           and d["jobQueue"] == q["jobQueueArn"], strip(d))
    return sub["jobId"]


# ------------------------------------------------------------------ b3/b4

def wait_job(b, job_id, statuses, timeout=90):
    deadline = time.time() + timeout
    seen = []
    while True:
        d = b.describe_service_job(jobId=job_id)
        if not seen or seen[-1] != d["status"]:
            seen.append(d["status"])
        if d["status"] in statuses:
            return d, seen
        if time.time() > deadline:
            raise Fail("service job %s: %s after %d s (seen %s)" % (job_id, d["status"], timeout, seen))
        time.sleep(0.2)


def case_succeeds(cl, b):
    r = b.submit_service_job(jobName="ok-job", jobQueue="q-plain",
                             serviceJobType="SAGEMAKER_TRAINING",
                             serviceRequestPayload=payload(cl, "ok-job-tj"), schedulingPriority=3,
                             tags={"run": "1"}, timeoutConfig={"attemptDurationSeconds": 300},
                             retryStrategy={"attempts": 2},
                             preemptionConfiguration={"preemptionRetriesBeforeTermination": 2})
    expect(r["jobArn"].endswith(":service-job/" + r["jobId"]), r)
    d, seen = wait_job(b, r["jobId"], ("SUCCEEDED", "FAILED"))
    expect(d["status"] == "SUCCEEDED", "%s (seen %s)" % (sc.short(strip(d)), seen))
    expect(d["isTerminated"] and d["stoppedAt"] >= d["startedAt"] >= d["createdAt"] > 0, strip(d))
    expect(d["latestAttempt"]["serviceResourceId"]["name"] == "TrainingJobArn"
           and d["latestAttempt"]["serviceResourceId"]["value"].endswith(":training-job/ok-job-tj"),
           d["latestAttempt"])
    expect(d["attempts"][0]["serviceResourceId"] == d["latestAttempt"]["serviceResourceId"], d)
    expect(d["schedulingPriority"] == 3 and d["tags"] == {"run": "1"}
           and d["retryStrategy"] == {"attempts": 2}
           and d["timeoutConfig"] == {"attemptDurationSeconds": 300}
           and d["preemptionConfiguration"] == {"preemptionRetriesBeforeTermination": 2}, strip(d))
    # The training job is the one the payload asked for, with the mapped limits.
    sm = sc.make_client(cl.endpoint, key=ADMIN[0], secret=ADMIN[1])
    tj = sm.describe_training_job(TrainingJobName="ok-job-tj")
    expect(tj["TrainingJobStatus"] == "Completed"
           and tj["RetryStrategy"] == {"MaximumRetryAttempts": 1}
           and tj["StoppingCondition"]["MaxRuntimeInSeconds"] == 300, sc.short(tj))
    return r["jobId"]


def case_terminate(cl, b):
    r = b.submit_service_job(jobName="long-job", jobQueue="q-plain",
                             serviceJobType="SAGEMAKER_TRAINING",
                             serviceRequestPayload=payload(cl, "long-job-tj", "sleep 120"))
    wait_job(b, r["jobId"], ("RUNNING",), timeout=60)
    b.terminate_service_job(jobId=r["jobId"], reason="no longer needed")
    d, seen = wait_job(b, r["jobId"], ("SUCCEEDED", "FAILED"), timeout=60)
    expect(d["status"] == "FAILED" and d["isTerminated"], "%s %s" % (strip(d), seen))
    return r["jobId"]


# ------------------------------------------------------------------ b5

def n_jobs(b):
    return len(b.list_service_jobs(maxResults=1000)["jobSummaryList"])


def case_refusals(cl, b):
    before = n_jobs(b)
    good = dict(jobName="bad", jobQueue="q-plain", serviceJobType="SAGEMAKER_TRAINING",
                serviceRequestPayload=payload(cl, "bad-tj"))

    def sub(**kw):
        args = dict(good)
        args.update(kw)
        for k in [k for k, v in args.items() if v is None]:
            del args[k]
        return lambda: b.submit_service_job(**args)
    refused(sub(jobQueue=None), "jobQueue", "required")
    refused(sub(serviceJobType="EKS_JOB"), "serviceJobType", "SAGEMAKER_TRAINING")
    refused(sub(jobQueue="no-such-queue"), "jobQueue", "no-such-queue")
    refused(sub(shareIdentifier="vision"), "shareIdentifier")
    refused(sub(jobQueue="q-fair"), "shareIdentifier", "required")
    refused(sub(jobQueue="q-quota"), "quotaShareName", "required")
    refused(sub(jobQueue="q-quota", quotaShareName="nope"), "quotaShareName", "nope")
    bad = json.loads(good["serviceRequestPayload"])
    bad["ResourceConfig"]["InstanceCount"] = 0
    refused(sub(serviceRequestPayload=json.dumps(bad)), "serviceRequestPayload",
            "instanceCount")
    refused(sub(serviceRequestPayload="not json"), "serviceRequestPayload")
    refused(sub(timeoutConfig={"attemptDurationSeconds": 100}), "attemptDurationSeconds",
            "MaxRuntimeInSeconds")
    refused(sub(retryStrategy={"attempts": 2, "evaluateOnExit": [{"action": "EXIT"}]}),
            "evaluateOnExit")
    # A member the model lacks (boto3 cannot send one): a signed raw request.
    body = json.dumps(dict(good, bogus=1)).encode()
    h = {"Content-Type": "application/json"}
    h.update(sc.sigv4_sign("POST", "127.0.0.1:%d" % cl.port, "/v1/submitservicejob", "", body,
                           ADMIN[0], ADMIN[1], h, service="batch"))
    r = sc.http_request(cl.port, "POST", "/v1/submitservicejob", body, h)
    expect(r.status == 400 and r.json.get("__type") == "ClientException"
           and "bogus" in r.json.get("message", ""), repr(r))
    # Signed for another service: refused.
    h = {"Content-Type": "application/json"}
    h.update(sc.sigv4_sign("POST", "127.0.0.1:%d" % cl.port, "/v1/describejobqueues", "", b"{}",
                           ADMIN[0], ADMIN[1], h, service="sagemaker"))
    r = sc.http_request(cl.port, "POST", "/v1/describejobqueues", b"{}", h)
    expect(r.status in (400, 403) and "jobQueues" not in (r.json or {}), repr(r))
    expect(n_jobs(b) == before, "a refused submission created a job")
    envs = [{"order": 1, "serviceEnvironment": "env-a"}]
    refused(lambda: b.create_job_queue(jobQueueName="q-bad", priority=1, jobQueueType="ECS",
                                       serviceEnvironmentOrder=envs), "jobQueueType")
    refused(lambda: b.create_job_queue(jobQueueName="q-bad", priority=1,
                                       jobQueueType="SAGEMAKER_TRAINING",
                                       serviceEnvironmentOrder=envs,
                                       computeEnvironmentOrder=[{"order": 1,
                                                                 "computeEnvironment": "ce"}]),
            "computeEnvironmentOrder")
    refused(lambda: b.create_job_queue(jobQueueName="q-bad", priority=1,
                                       jobQueueType="SAGEMAKER_TRAINING",
                                       serviceEnvironmentOrder=[{"order": 1,
                                                                 "serviceEnvironment": "nope"}]),
            "serviceEnvironmentOrder", "nope")
    refused(lambda: b.create_job_queue(jobQueueName="q-bad", priority=1,
                                       jobQueueType="SAGEMAKER_TRAINING",
                                       serviceEnvironmentOrder=envs + [{"order": 2,
                                                                        "serviceEnvironment": "env-a"}]),
            "serviceEnvironmentOrder", "one here")
    refused(lambda: b.create_service_environment(
        serviceEnvironmentName="env-bad", serviceEnvironmentType="SAGEMAKER_TRAINING",
        capacityLimits=[{"maxCapacity": 1, "capacityUnit": "gpus"}]), "capacityUnit")
    refused(lambda: b.create_scheduling_policy(name="p-bad", fairsharePolicy={
        "computeReservation": 100}), "computeReservation")
    refused(lambda: b.create_quota_share(
        quotaShareName="s-bad", jobQueue="q-quota",
        capacityLimits=[{"maxCapacity": 1, "capacityUnit": "NUM_INSTANCES"}],
        resourceSharingConfiguration={"strategy": "RESERVE", "borrowLimit": 2},
        preemptionConfiguration={"inSharePreemption": "ENABLED"}), "borrowLimit")
    refused(lambda: b.create_quota_share(
        quotaShareName="s-bad", jobQueue="q-plain",
        capacityLimits=[{"maxCapacity": 1, "capacityUnit": "NUM_INSTANCES"}],
        resourceSharingConfiguration={"strategy": "RESERVE"},
        preemptionConfiguration={"inSharePreemption": "ENABLED"}), "quotaSharePolicy")
    refused(lambda: b.create_job_queue(jobQueueName="q-plain", priority=1,
                                       jobQueueType="SAGEMAKER_TRAINING",
                                       serviceEnvironmentOrder=envs), "already exists")
    names = [q["jobQueueName"] for q in b.describe_job_queues()["jobQueues"]]
    expect("q-bad" not in names, names)


# ------------------------------------------------------------------ b6

def case_roles(cl, b):
    a, o = client(cl, ALICE), client(cl, BOB)
    envs = [{"order": 1, "serviceEnvironment": "env-a"}]
    refused(lambda: a.create_job_queue(jobQueueName="q-alice", priority=1,
                                       jobQueueType="SAGEMAKER_TRAINING",
                                       serviceEnvironmentOrder=envs),
            "admin", code="AccessDeniedException")
    refused(lambda: a.delete_job_queue(jobQueue="q-plain"), code="AccessDeniedException")
    names = [q["jobQueueName"] for q in a.describe_job_queues()["jobQueues"]]
    expect({"q-fair", "q-plain", "q-quota"} <= set(names), "a user reads the queues: %s" % names)
    r = a.submit_service_job(jobName="alice-job", jobQueue="q-fair", shareIdentifier="vision",
                             serviceJobType="SAGEMAKER_TRAINING",
                             serviceRequestPayload=payload(cl, "alice-tj", "sleep 60"))
    expect(a.describe_service_job(jobId=r["jobId"])["jobName"] == "alice-job", r)
    refused(lambda: o.describe_service_job(jobId=r["jobId"]), "does not exist")
    refused(lambda: o.terminate_service_job(jobId=r["jobId"], reason="x"), "does not exist")
    refused(lambda: o.update_service_job(jobId=r["jobId"], schedulingPriority=9), "does not exist")
    mine = [j["jobId"] for j in o.list_service_jobs()["jobSummaryList"]]
    expect(r["jobId"] not in mine, mine)
    expect(r["jobId"] in [j["jobId"] for j in b.list_service_jobs()["jobSummaryList"]],
           "the admin sees alice's job")
    refused(lambda: o.submit_service_job(jobName="bob-job", jobQueue="q-plain",
                                         serviceJobType="SAGEMAKER_TRAINING",
                                         serviceRequestPayload=payload(cl, "bob-tj", "true")),
            "q-plain", "trainctl_batch_queues", code="AccessDeniedException")
    a.terminate_service_job(jobId=r["jobId"], reason="alice stops her own")
    d, _ = wait_job(a, r["jobId"], ("FAILED",), timeout=60)
    return r["jobId"]


# ------------------------------------------------------------------ b7

def case_sched_view(cl, b):
    """What a scheduler reads of an unfinished service job, in one query."""
    import sqlite3
    r = b.submit_service_job(jobName="view-job", jobQueue="q-fair", shareIdentifier="vision",
                             schedulingPriority=5, serviceJobType="SAGEMAKER_TRAINING",
                             serviceRequestPayload=payload(cl, "view-tj", "sleep 60"))
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(cl.state, "trainctl.db"), uri=True)
    try:
        row = db.execute("SELECT queue_priority, policy_kind, share_decay_s, share_identifier, "
                         "weight, scheduling_priority, training_job, owner FROM batch_sched "
                         "WHERE job_id = ?", (r["jobId"],)).fetchone()
    finally:
        db.close()
    b.terminate_service_job(jobId=r["jobId"], reason="seen")
    expect(row == (20, "FAIRSHARE", 60, "vision", 1.0, 5, "view-tj", "ops"), row)
    wait_job(b, r["jobId"], ("FAILED",), timeout=60)


def case_token(cl, b):
    args = dict(jobName="tok-job", jobQueue="q-plain", serviceJobType="SAGEMAKER_TRAINING",
                serviceRequestPayload=payload(cl, "tok-tj"), clientToken="token-1")
    r1 = b.submit_service_job(**args)
    r2 = b.submit_service_job(**args)
    expect(r1["jobId"] == r2["jobId"], (r1, r2))
    args["schedulingPriority"] = 7
    refused(lambda: b.submit_service_job(**args), "clientToken")
    return r1["jobId"]


# ------------------------------------------------------------------ b8

def case_list_update_delete(cl, b, ok_id):
    names = [j["jobName"] for j in b.list_service_jobs(filters=[
        {"name": "JOB_NAME", "values": ["ok-job"]}])["jobSummaryList"]]
    expect(names == ["ok-job"], names)
    got, token, pages = [], None, 0
    while True:
        kw = {"maxResults": 1}
        if token:
            kw["nextToken"] = token
        page = b.list_service_jobs(**kw)
        got += [j["jobId"] for j in page["jobSummaryList"]]
        pages += 1
        token = page.get("nextToken")
        if not token:
            break
    expect(len(got) == len(set(got)) == n_jobs(b) and pages >= len(got), (got, pages))
    ok = b.list_service_jobs(jobQueue="q-plain", jobStatus="SUCCEEDED")["jobSummaryList"]
    expect(ok_id in [j["jobId"] for j in ok] and all(j["status"] == "SUCCEEDED" for j in ok), ok)
    now = int(time.time() * 1000)
    expect(not b.list_service_jobs(filters=[{"name": "AFTER_CREATED_AT",
                                             "values": [str(now)]}])["jobSummaryList"], "after now")
    refused(lambda: b.list_service_jobs(filters=[{"name": "JOB_DEFINITION", "values": ["x"]}]),
            "JOB_DEFINITION")
    r = b.update_service_job(jobId=ok_id, schedulingPriority=42)
    expect(r["jobId"] == ok_id, r)
    expect(b.describe_service_job(jobId=ok_id)["schedulingPriority"] == 42, "priority kept")
    refused(lambda: b.delete_service_environment(serviceEnvironment="env-a"), "q-")
    refused(lambda: b.delete_scheduling_policy(arn=b.describe_job_queues(
        jobQueues=["q-fair"])["jobQueues"][0]["schedulingPolicyArn"]), "q-fair")
    refused(lambda: b.delete_job_queue(jobQueue="q-quota"), "quota share")
    b.create_job_queue(jobQueueName="q-busy", priority=1, jobQueueType="SAGEMAKER_TRAINING",
                       serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "env-a"}])
    busy = b.submit_service_job(jobName="busy", jobQueue="q-busy", serviceJobType="SAGEMAKER_TRAINING",
                                serviceRequestPayload=payload(cl, "busy-tj", "sleep 60"))
    refused(lambda: b.delete_job_queue(jobQueue="q-busy"), "unfinished")
    b.terminate_service_job(jobId=busy["jobId"], reason="done")
    wait_job(b, busy["jobId"], ("FAILED",), timeout=60)
    # Its training job deleted, the service job stays FAILED and says why.
    sm = sc.make_client(cl.endpoint, key=ADMIN[0], secret=ADMIN[1])
    sm.delete_training_job(TrainingJobName="busy-tj")
    d = b.describe_service_job(jobId=busy["jobId"])
    expect(d["status"] == "FAILED" and "deleted" in d.get("statusReason", ""), strip(d))
    b.delete_job_queue(jobQueue="q-busy")
    expect("q-busy" not in [q["jobQueueName"] for q in b.describe_job_queues()["jobQueues"]],
           "deleted")
    b.create_scheduling_policy(name="p-gone", quotaSharePolicy={"idleResourceAssignmentStrategy": "FIFO"})
    arn = [p["arn"] for p in b.list_scheduling_policies()["schedulingPolicies"]
           if p["arn"].endswith("/p-gone")][0]
    b.delete_scheduling_policy(arn=arn)
    expect(not b.describe_scheduling_policies(arns=[arn])["schedulingPolicies"], "policy deleted")


# ------------------------------------------------------------------ b9

def snapshot(b):
    return {
        "envs": b.describe_service_environments()["serviceEnvironments"],
        "queues": b.describe_job_queues()["jobQueues"],
        "policies": b.describe_scheduling_policies(arns=[p["arn"] for p in b.list_scheduling_policies()
                                                         ["schedulingPolicies"]])["schedulingPolicies"],
        "shares": b.list_quota_shares(jobQueue="q-quota")["quotaShares"],
        "jobs": sorted((j["jobId"], j["status"]) for j in
                       b.list_service_jobs(maxResults=1000)["jobSummaryList"]),
    }


def case_restart(cl, b, ids):
    for j in b.list_service_jobs(maxResults=1000)["jobSummaryList"]:
        wait_job(b, j["jobId"], ("SUCCEEDED", "FAILED"), timeout=60)
    before = snapshot(b)
    jobs = {i: strip(b.describe_service_job(jobId=i)) for i in ids}
    cl.stop()
    why = cl.start(wait_hosts=False)
    expect(why is None, "restart: %s" % why)
    after = snapshot(b)
    expect(before == after, "before %s\nafter %s" % (sc.short(before, 2000), sc.short(after, 2000)))
    for i, d in jobs.items():
        d2 = strip(b.describe_service_job(jobId=i))
        expect(d == d2, "job %s: %s -> %s" % (i, d, d2))


def main():
    tap = sc.Tap()
    cl = fl.LocalCluster(n_hosts=2, prefix="trainctl-batch-")
    cl.extra += ["--credentials", write_credentials(cl.tmp)]
    why = cl.start(wait_hosts=False)
    tap.log_hint = cl.log_tail
    if not tap.ok(why is None, "trainctld starts", why):
        return tap.finish()
    try:
        b = client(cl, ADMIN)
        ids = []
        tap.case("b1 objects round trip: create, describe, list, update", case_objects, cl, b)
        ids.append(tap.case("b2 aws batch (CLI v1): environment, policies, queue, two quota shares, "
                            "a service job", case_cli, cl, b))
        ok_id = tap.case("b3 a service job runs to SUCCEEDED", case_succeeds, cl, b)
        ids.append(ok_id)
        ids.append(tap.case("b4 TerminateServiceJob -> FAILED", case_terminate, cl, b))
        tap.case("b5 refusals are ClientException naming the member, nothing created",
                 case_refusals, cl, b)
        ids.append(tap.case("b6 a user key: no queue created, only its own jobs", case_roles, cl, b))
        ids.append(tap.case("b7 clientToken: same request, same jobId", case_token, cl, b))
        tap.case("b7 the store's batch_sched view: an unfinished job's scheduling members",
                 case_sched_view, cl, b)
        if ok_id:
            tap.case("b8 list filters and pages, UpdateServiceJob, deletes refused while in use",
                     case_list_update_delete, cl, b, ok_id)
        tap.case("b9 a restart keeps every object and job", case_restart, cl, b,
                 [i for i in ids if isinstance(i, str)])
    finally:
        cl.stop()
        if tap.failed:
            tap.note(cl.log_tail(40))
        cl.cleanup()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
