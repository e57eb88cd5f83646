-- Fragment (included by the report scripts): the reports of earlier versions, a list of JSON
-- reports oldest first ({reports}:chat), become open reports numbered in their order, once.
--
-- A report's key is <table>/<msg>/<reporter>, as server/store/reports.py writes it.
local function adopt_legacy(legacy, open, items, stats)
    if redis.call('EXISTS', legacy) == 0 then
        return
    end
    for _, raw in ipairs(redis.call('LRANGE', legacy, 0, -1)) do
        local ok, report = pcall(cjson.decode, raw)
        if ok and type(report) == 'table' then
            local key = tostring(report['table']) .. '/' .. tostring(report['msg']) .. '/'
                .. tostring(report['reporter'])
            if not redis.call('ZSCORE', open, key) then
                local number = redis.call('HINCRBY', stats, 'last', 1)
                redis.call('ZADD', open, number, key)
                redis.call('HSET', items, key, raw)
            end
        end
    end
    redis.call('DEL', legacy)
end
