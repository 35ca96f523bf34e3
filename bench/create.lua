-- wrk script: CreateTrainingJob with a unique name per request.
--
--   wrk -t2 -c64 -d10s -s bench/create.lua http://127.0.0.1:PORT/ -- PREFIX [QUOTA DONEDIR]
--
-- Names are PREFIX-<thread>-<n>, n = 1, 2, ... per thread. With QUOTA > 0
-- each thread stops after QUOTA responses and writes DONEDIR/done.<thread>
-- (holding how many requests it sent), so that the caller can end wrk
-- early with SIGINT; wrk itself always waits out its -d duration.
-- Which names exist afterwards is not known here (answers are not matched
-- to requests, and requests in flight at the end may or may not be done):
-- ask the server (bench/list_latency.py --names-out).
-- done() prints "RESULT ok=... non200=... sent_min=..."; non-200 answers
-- are counted, and the first three are shown on stderr.

local threads = {}
local nthreads = 0

function setup(thread)
	nthreads = nthreads + 1
	thread:set("tid", nthreads)
	table.insert(threads, thread)
end

-- What the SageMaker Python SDK sends for a PyTorch estimator.
local template = [[{"TrainingJobName":"@NAME@",
"AlgorithmSpecification":{"TrainingImage":"763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:1.13.1-cpu-py39","TrainingInputMode":"File","MetricDefinitions":[{"Name":"train:loss","Regex":"loss=([0-9\\.]+)"}],"EnableSageMakerMetricsTimeSeries":true},
"RoleArn":"arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole",
"InputDataConfig":[{"ChannelName":"train","DataSource":{"S3DataSource":{"S3DataType":"S3Prefix","S3Uri":"s3://bench-bucket/data/train/","S3DataDistributionType":"FullyReplicated"}},"ContentType":"text/csv","CompressionType":"None"},{"ChannelName":"validation","DataSource":{"S3DataSource":{"S3DataType":"S3Prefix","S3Uri":"s3://bench-bucket/data/validation/","S3DataDistributionType":"ShardedByS3Key"}}}],
"HyperParameters":{"epochs":"10","lr":"0.01","batch-size":"64","sagemaker_program":"\"train.py\"","sagemaker_submit_directory":"\"s3://bench-bucket/code/sourcedir.tar.gz\"","sagemaker_region":"\"us-east-1\""},
"OutputDataConfig":{"S3OutputPath":"s3://bench-bucket/output"},
"ResourceConfig":{"InstanceType":"ml.m5.xlarge","InstanceCount":2,"VolumeSizeInGB":30},
"StoppingCondition":{"MaxRuntimeInSeconds":86400},
"Tags":[{"Key":"project","Value":"bench"}],
"CheckpointConfig":{"S3Uri":"s3://bench-bucket/checkpoints/","LocalPath":"/opt/ml/checkpoints"},
"Environment":{"LOG_LEVEL":"info"},
"EnableNetworkIsolation":false,"EnableManagedSpotTraining":false}]]

function init(args)
	prefix = args[1] or "bench"
	quota = tonumber(args[2] or "0")
	donedir = args[3]
	sent, ok, non200, flagged = 0, 0, 0, false
	wrk.method = "POST"
	wrk.headers["Content-Type"] = "application/x-amz-json-1.1"
	wrk.headers["X-Amz-Target"] = "SageMaker.CreateTrainingJob"
end

function request()
	sent = sent + 1
	local name = prefix .. "-" .. tid .. "-" .. sent
	return wrk.format(nil, "/", nil, (template:gsub("@NAME@", name)))
end

function response(status, headers, body)
	if status == 200 then
		ok = ok + 1
	else
		non200 = non200 + 1
		if non200 <= 3 then
			io.stderr:write("create: HTTP " .. status .. ": " .. string.sub(body or "", 1, 300) .. "\n")
		end
	end
	if quota > 0 and not flagged and ok + non200 >= quota then
		flagged = true
		if donedir then
			local f = io.open(donedir .. "/done." .. tid, "w")
			if f then f:write(sent .. "\n"); f:close() end
		end
		wrk.thread:stop()
	end
end

function done(summary, latency, requests)
	local tok, tbad, smin = 0, 0, nil
	for _, t in ipairs(threads) do
		tok = tok + (t:get("ok") or 0)
		tbad = tbad + (t:get("non200") or 0)
		local s = t:get("sent") or 0
		if smin == nil or s < smin then smin = s end
	end
	io.write(string.format("RESULT ok=%d non200=%d sent_min=%d socket_errors=%d\n", tok, tbad, smin or 0,
		summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
