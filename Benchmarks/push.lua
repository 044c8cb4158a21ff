-- wrk script for the sync server benchmark: one connection per thread is one device with a slot
-- of its own. After its first push it alternates a fast-forward (If-Match on its head) with a
-- push from the version before (a stale base: the server merges three ways).
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end

function init(args)
  local function read(name)
    local file = assert(io.open(name, "rb"))
    local bytes = file:read("*a")
    file:close()
    return bytes
  end
  bodies = { read(os.getenv("SAVE_A")), read(os.getenv("SAVE_B")) }
  path = "/v1/spaces/bench/d" .. id .. "/slots/Library/Preferences/com.example.blocks.plist"
  pushes, head, failed = 0, nil, 0
end

function request()
  pushes = pushes + 1
  local headers = { ["Device-Id"] = "d" .. id }
  if head == nil then
    headers["If-None-Match"] = "*"
  elseif pushes % 2 == 0 then
    headers["If-Match"] = '"' .. head .. '"'
  else
    headers["If-Match"] = '"' .. math.max(1, head - 1) .. '"'
  end
  return wrk.format("PUT", path, headers, bodies[(pushes % 2) + 1])
end

function response(status, headers, body)
  local tag = headers["ETag"] or headers["etag"]
  if tag then head = tonumber(string.match(tag, "%d+")) end
  if status ~= 200 then failed = failed + 1 end
end
