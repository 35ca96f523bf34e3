"""CloudWatch metrics of training jobs with the newer client generation
(pyenv python3: botocore 1.43, whose cloudwatch model lists the protocols
smithy-rpc-v2-cbor, json and query; botocore picks json). Run through
tests/compat/test_cwmetrics_new.sh, which picks the interpreter; not named
test_* so that tests/run.sh does not run it with /usr/bin/python3.

The cases of cwmcases.py run three times: with botocore's own model (JSON
1.0), and with copies of it that list only smithy-rpc-v2-cbor or only
query, so that botocore's own CBOR and query serializers and parsers talk
to trainctld. Also checks the awsQueryCompatible error header. TAP on
stdout.
"""
import copy
import gzip
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smcompat as C  # noqa: E402

C.hermetic_env()
import botocore  # noqa: E402
import botocore.session  # noqa: E402
import cwmcases as W  # noqa: E402


def model_dirs(tmp):
    """{protocol: data path} holding the cloudwatch model with only that
    protocol listed."""
    loader = botocore.session.get_session().get_component("data_loader")
    model = loader.load_service_model("cloudwatch", "service-2")
    out = {}
    for proto in ("smithy-rpc-v2-cbor", "query"):
        m = copy.deepcopy(model)
        m["metadata"]["protocols"] = [proto]
        m["metadata"]["protocol"] = proto
        d = os.path.join(tmp, "models-" + proto)
        path = os.path.join(d, "cloudwatch", m["metadata"]["apiVersion"])
        os.makedirs(path)
        with open(os.path.join(path, "service-2.json"), "w") as f:
            json.dump(m, f)
        out[proto] = d
    return out


def main():
    tap = C.Tap()
    env = W.Env(tap)
    ok = tap.case("trainctld --local-hosts 1 runs a job that prints metrics",
                  env.start, "cwm-job-new")
    if not ok:
        tap.note(env.daemon.log_tail() if env.daemon else "")
        return tap.finish()
    cw = env.client("cloudwatch")
    proto = cw.meta.service_model.resolved_protocol \
        if hasattr(cw.meta.service_model, "resolved_protocol") else cw.meta.service_model.protocol
    tap.ok(proto == "json", "botocore %s picks the json protocol for cloudwatch (got %s)"
           % (botocore.__version__, proto))
    W.run(tap, env, cw, "botocore %s (json 1.0)" % botocore.__version__)

    def t_query_error_header():
        from botocore.exceptions import ClientError
        start, end = env.window()
        try:
            W.stats(cw, env, "train:loss", 7, ["Sum"])
        except ClientError as e:
            h = e.response["ResponseMetadata"]["HTTPHeaders"]
            C.expect(h.get("x-amzn-query-error") == "InvalidParameterValue;Sender", C.short(h))
            C.expect(e.response["Error"].get("Type") == "Sender", C.short(e.response))
            return
        raise C.Fail("Period 7 was accepted")
    tap.case("json 1.0: errors carry x-amzn-query-error Code;Sender", t_query_error_header)

    def t_bucket_service():
        # The CBOR face's path starts /service/: a bucket of that name
        # must not take it.
        import boto3
        import botocore.config
        s3 = boto3.session.Session(
            aws_access_key_id=W.ADMIN[0], aws_secret_access_key=W.ADMIN[1],
            region_name=C.REGION).client(
                "s3", endpoint_url=env.daemon.endpoint,
                config=botocore.config.Config(s3={"addressing_style": "path"},
                                              retries={"total_max_attempts": 1}))
        s3.create_bucket(Bucket="service")
        names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
        C.expect("service" in names, "buckets %r" % names)
    tap.case("S3 bucket 'service' created (the CBOR cases run beside it)", t_bucket_service)

    for proto, d in sorted(model_dirs(env.daemon.tmp).items()):
        c = env.client("cloudwatch", data_path=d)
        got = getattr(c.meta.service_model, "resolved_protocol", None) or c.meta.service_model.protocol
        if not tap.ok(got == proto, "a client made from the %s-only model speaks %s (got %s)"
                      % (proto, proto, got)):
            continue
        W.run(tap, env, c, "botocore %s (%s)" % (botocore.__version__, proto), data_path=d)
    if tap.failed:
        tap.note(env.daemon.log_tail(40))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
