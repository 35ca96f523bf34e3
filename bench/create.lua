-- wrk script: CreateTrainingJob with a unique name per request.
--
--   wrk -t2 -c64 -d10s -s bench/create.lua http://127.0.0.1:PORT/ -- PREFIX [QUOTA DONEDIR]
--
-- Names are PREFIX-<thread>-<n>, n = 1, 2, ... per thread, every job an
-- ml.m5.xlarge tagged project=bench. PREFIX "mix" (bench/page_list.py)
-- varies them instead: job n is named <family>-<thread>-<n>, family one of
-- five model names in turn; its instance type is ml.p4d.24xlarge when
-- n % 1000 == 7 (0.1 %), else by n % 20: ml.m5.xlarge (10 of 20),
-- ml.c5.2xlarge (5), ml.g5.xlarge (3), ml.p3.2xlarge (2); its tags are
-- team=<red|blue|green> when n % 4 == 0 (25 %), project=bench when n % 2
-- == 1 (50 %) and audit=hold when n % 1000 == 500 (0.1 %). With QUOTA > 0
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
"ResourceConfig":{"InstanceType":"@ITYPE@","InstanceCount":2,"VolumeSizeInGB":30},
"StoppingCondition":{"MaxRuntimeInSeconds":86400},
"Tags":[@TAGS@],
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

local families = { "resnet50-imagenet", "bert-base-finetune", "llama-7b-sft", "xgboost-churn", "mnist-cnn" }
local teams = { "red", "blue", "green" }
local types = { { 10, "ml.m5.xlarge" }, { 15, "ml.c5.2xlarge" }, { 18, "ml.g5.xlarge" }, { 20, "ml.p3.2xlarge" } }

local function itype(n)
	if n % 1000 == 7 then
		return "ml.p4d.24xlarge"
	end
	for _, t in ipairs(types) do
		if n % 20 < t[1] then
			return t[2]
		end
	end
end

local function tags(n)
	local t = {}
	if n % 4 == 0 then
		table.insert(t, '{"Key":"team","Value":"' .. teams[math.floor(n / 4) % 3 + 1] .. '"}')
	end
	if n % 2 == 1 then
		table.insert(t, '{"Key":"project","Value":"bench"}')
	end
	if n % 1000 == 500 then
		table.insert(t, '{"Key":"audit","Value":"hold"}')
	end
	return table.concat(t, ",")
end

function request()
	sent = sent + 1
	local name, ty, tg = prefix .. "-" .. tid .. "-" .. sent, "ml.m5.xlarge", '{"Key":"project","Value":"bench"}'
	if prefix == "mix" then
		name, ty, tg = families[sent % #families + 1] .. "-" .. tid .. "-" .. sent, itype(sent), tags(sent)
	end
	local body = template:gsub("@NAME@", name):gsub("@ITYPE@", ty):gsub("@TAGS@", tg)
	return wrk.format(nil, "/", nil, body)
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
