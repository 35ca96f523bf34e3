-- wrk script: PutObject through presigned URLs (bench/s3.sh).
--
--   wrk -tT -c16 -d10s -s bench/s3_put.lua http://127.0.0.1:PORT -- URLS SIZE T
--
-- URLS holds one presigned path and query a line (bench/s3_small.py
-- presign); each thread walks its own share of them in turn, wrapping
-- around (a wrapped PUT replaces the object). Every body is SIZE bytes.
-- done() prints "RESULT ok=... non2xx=..." and the first non-2xx answers
-- go to stderr.

local threads = {}

function setup(thread)
	table.insert(threads, thread)
	thread:set("tid", #threads)
end

function init(args)
	local f = assert(io.open(args[1]))
	urls = {}
	for line in f:lines() do
		table.insert(urls, line)
	end
	f:close()
	body = string.rep("x", tonumber(args[2]))
	step = tonumber(args[3])
	pos = tid
	ok = 0
	bad = 0
	shown = 0
end

function request()
	local url = urls[pos]
	pos = pos + step
	if pos > #urls then
		pos = (pos - 1) % #urls + 1
	end
	return wrk.format("PUT", url, { ["Content-Length"] = #body }, body)
end

function response(status, headers, b)
	if status >= 200 and status < 300 then
		ok = ok + 1
	else
		bad = bad + 1
		if shown < 3 then
			shown = shown + 1
			io.stderr:write("status " .. status .. ": " .. b:sub(1, 300) .. "\n")
		end
	end
end

function done(summary, latency, requests)
	local o, b = 0, 0
	for _, t in ipairs(threads) do
		o = o + t:get("ok")
		b = b + t:get("bad")
	end
	io.write(string.format("RESULT ok=%d non2xx=%d\n", o, b))
end
