# The Ruby client beaneater (Debian's ruby-beaneater) against a fresh server.
# Usage: ruby tests/system/clients/beaneater.rb HOST PORT
require 'json'
require 'timeout'

begin
  require 'beaneater'
rescue LoadError => e
  warn "beaneater: FAIL at (start): cannot load beaneater (apt-get install ruby-beaneater): #{e.message}"
  exit 2
end

CLIENT = 'beaneater'.freeze
TUBE = 'client-beaneater'.freeze
OTHER = "#{TUBE}-other".freeze
LIMIT_SECONDS = 30

class Mismatch < StandardError; end

$step = '(start)'
$checks = 0

def step(name)
  $step = name
end

def eq(what, got, want)
  $checks += 1
  raise Mismatch, "#{what}: expected #{want.inspect}, got #{got.inspect}" unless got == want
end

def ok(what, cond, got = nil)
  $checks += 1
  raise Mismatch, "#{what}#{got.nil? ? '' : ": got #{got.inspect}"}" unless cond
end

# A job as [id, body], or nil. beaneater's job ids are the strings from the reply line.
def job(j)
  j.nil? ? nil : [j.id.to_s, j.body]
end

# beaneater's stats objects turn "current-jobs-ready" into current_jobs_ready.
def key(k)
  k.tr('-', '_')
end

def has_keys(what, struct, keys)
  present = struct.keys
  keys.each do |k|
    $checks += 1
    raise Mismatch, "#{what}: missing key #{k.inspect} (keys: #{present.join(', ')})" unless present.include?(key(k))
  end
end

def fields(what, struct, want)
  h = struct.to_h
  want.each do |k, v|
    $checks += 1
    raise Mismatch, "#{what}: missing key #{k.inspect}" unless h.key?(key(k))
    got = h[key(k)]
    raise Mismatch, "#{what}: #{k} expected #{v.to_s.inspect}, got #{got.inspect}" unless got.to_s == v.to_s
  end
end

def raises(what, klass)
  $checks += 1
  begin
    v = yield
  rescue Mismatch
    raise
  rescue klass
    return
  rescue StandardError => e
    raise Mismatch, "#{what}: expected #{klass}, got #{e.class}: #{e.message}"
  end
  raise Mismatch, "#{what}: expected #{klass}, got #{v.inspect}"
end

# A JSON file of this repository's tests, parsed.
def read_json(path)
  JSON.parse(File.read(File.join(__dir__, path)))
end

# The stats keys, and what every client script expects by step (scenario.json says how).
KEYS = read_json('../../harness/stats_keys.json').freeze
STATS_KEYS = KEYS['stats'].freeze
STATS_JOB_KEYS = KEYS['stats-job'].freeze
STATS_TUBE_KEYS = KEYS['stats-tube'].freeze
SCENARIO = read_json('scenario.json').freeze

# The fields scenario.json expects of the stats-job or stats-tube reply at the current step.
def want
  SCENARIO['fields'].fetch($step) { raise "scenario.json has no fields for step #{$step}" }
end

# `stats` at the end, as scenario.json says it grew from before (the first `stats`, as a Hash).
def grown(before)
  SCENARIO['grown'].to_h { |k, d| [k, before[key(k)].to_i + d] }
end

# One `stats` round trip, as the StatStruct beaneater builds from it.
def server_stats(bc)
  bc.stats.send(:data)
end

def scenario(host, port)
  step 'connect'
  bc = Beaneater.new("#{host}:#{port}")

  step 'stats (before)'
  s0 = server_stats(bc)
  has_keys 'stats', s0, STATS_KEYS
  ok 'stats version is non-empty', !s0.version.to_s.empty?, s0.version
  ok 'stats current-connections >= 1', s0.current_connections.to_i >= 1, s0.current_connections
  s0 = s0.to_h

  tube = bc.tubes[TUBE]
  step 'use'
  bc.tubes.use(TUBE)
  step 'list-tube-used'
  eq 'list-tube-used', bc.tubes.used.name, TUBE

  step 'watch'
  bc.tubes.watch(TUBE)
  step 'ignore default'
  bc.tubes.ignore('default')
  step 'list-tubes-watched'
  eq 'list-tubes-watched', bc.tubes.watched.map(&:name), [TUBE]
  step 'ignore last watched tube (NOT_IGNORED)'
  raises('ignore of the only watched tube', Beaneater::NotIgnoredError) { bc.tubes.ignore(TUBE) }

  step 'put'
  body1 = 'hello tubeway'
  put1 = tube.put(body1, pri: 10, delay: 0, ttr: 30)
  eq 'put status', put1[:status], 'INSERTED'
  id1 = put1[:id].to_s
  ok 'put id is a positive integer', id1.match?(/\A[1-9][0-9]*\z/), id1

  step 'peek <id>'
  eq 'peek', job(bc.jobs.find(id1)), [id1, body1]
  step 'peek-ready'
  eq 'peek-ready', job(tube.peek(:ready)), [id1, body1]
  step 'peek-delayed (none)'
  eq 'peek-delayed on a tube with no delayed job', tube.peek(:delayed), nil
  step 'peek-buried (none)'
  eq 'peek-buried on a tube with no buried job', tube.peek(:buried), nil

  step 'stats-job (ready)'
  j = bc.jobs.find(id1)
  j1 = j.stats
  has_keys 'stats-job', j1, STATS_JOB_KEYS
  fields 'stats-job', j1, { 'id' => id1, 'tube' => TUBE }.merge(want)

  step 'stats-tube (one ready)'
  t1 = tube.stats
  has_keys 'stats-tube', t1, STATS_TUBE_KEYS
  fields 'stats-tube', t1, { 'name' => TUBE }.merge(want)

  step 'reserve'
  r = bc.tubes.reserve
  eq 'reserve', job(r), [id1, body1]
  step 'stats-job (reserved)'
  fields 'stats-job', r.stats, want
  ok 'job reports reserved', r.reserved?
  step 'stats-tube (one reserved)'
  fields 'stats-tube', tube.stats, want

  step 'touch'
  eq 'touch status', r.touch[:status], 'TOUCHED'
  step 'stats-job (after touch)'
  jt = r.stats
  fields 'stats-job', jt, want
  ok 'stats-job time-left <= ttr after touch', jt.time_left.to_i <= 30, jt.time_left

  step 'release with delay'
  eq 'release status', r.release(pri: 20, delay: 60)[:status], 'RELEASED'
  step 'stats-job (delayed)'
  fields 'stats-job', r.stats, want
  step 'peek-delayed'
  eq 'peek-delayed', job(tube.peek(:delayed)), [id1, body1]
  step 'peek-ready (none)'
  eq 'peek-ready with only a delayed job', tube.peek(:ready), nil
  step 'stats-tube (one delayed)'
  fields 'stats-tube', tube.stats, want

  step 'kick (delayed)'
  k = tube.kick(5)
  eq 'kick status', k[:status], 'KICKED'
  eq 'kick count', k[:id].to_s, '1'
  step 'stats-job (kicked)'
  fields 'stats-job', r.stats, want

  step 'reserve (again)'
  r = bc.tubes.reserve
  eq 'reserve', job(r), [id1, body1]
  step 'bury'
  eq 'bury status', r.bury(pri: 7)[:status], 'BURIED'
  step 'stats-job (buried)'
  fields 'stats-job', r.stats, want
  step 'peek-buried'
  eq 'peek-buried', job(tube.peek(:buried)), [id1, body1]
  step 'stats-tube (one buried)'
  fields 'stats-tube', tube.stats, want

  step 'put (second job)'
  body2 = 'second job'
  id2 = tube.put(body2, pri: 100, delay: 0, ttr: 30)[:id].to_s
  eq 'second put id', id2, (id1.to_i + 1).to_s
  step 'kick (buried only)'
  eq 'kick count with a buried and a ready job', tube.kick(5)[:id].to_s, '1'
  step 'stats-job (kicked from buried)'
  fields 'stats-job', bc.jobs.find(id1).stats, want
  step 'stats-tube (two ready)'
  fields 'stats-tube', tube.stats, want

  step 'reserve (priority order)'
  r = bc.tubes.reserve
  eq 'reserve takes the most urgent job', job(r), [id1, body1]
  step 'delete'
  eq 'delete status', r.delete[:status], 'DELETED'
  step 'peek <deleted id>'
  eq 'peek of a deleted job', bc.jobs.find(id1), nil
  step 'stats-job <deleted id>'
  raises('stats-job of a deleted job', Beaneater::NotFoundError) { r.stats }
  ok 'job no longer exists', !r.exists?
  step 'delete <deleted id>'
  raises('delete of a deleted job', Beaneater::NotFoundError) { r.delete }

  step 'reserve (second job)'
  r = bc.tubes.reserve
  eq 'reserve', job(r), [id2, body2]
  step 'delete (second job)'
  eq 'delete status', r.delete[:status], 'DELETED'

  step 'use other tube'
  other = bc.tubes[OTHER]
  step 'put (other tube)'
  body3 = 'other tube'
  id3 = other.put(body3, pri: 1024, delay: 0, ttr: 30)[:id].to_s
  eq 'third put id', id3, (id2.to_i + 1).to_s
  eq 'list-tube-used', bc.tubes.used.name, OTHER
  step 'reserve-with-timeout 0 (not watching the other tube)'
  raises('reserve-with-timeout 0', Beaneater::TimedOutError) { bc.tubes.reserve(0) }
  step 'watch other tube'
  bc.tubes.watch(OTHER)
  eq 'list-tubes-watched', bc.tubes.watched.map(&:name), [TUBE, OTHER]
  step 'reserve (from the other tube)'
  r = bc.tubes.reserve
  eq 'reserve', job(r), [id3, body3]
  step 'stats-job (other tube)'
  fields 'stats-job', r.stats, { 'tube' => OTHER }.merge(want)
  step 'delete (other tube)'
  eq 'delete status', r.delete[:status], 'DELETED'
  step 'ignore other tube'
  bc.tubes.ignore(OTHER)
  step 'list-tubes-watched (after ignore)'
  eq 'list-tubes-watched', bc.tubes.watched.map(&:name), [TUBE]

  step 'stats-tube (end)'
  fields 'stats-tube', tube.stats, want
  step 'stats (end)'
  s1 = server_stats(bc)
  has_keys 'stats', s1, STATS_KEYS
  fields 'stats', s1, grown(s0)

  step 'close'
  bc.close
end

if ARGV.length != 2 || ARGV[1] !~ /\A[0-9]+\z/
  warn "usage: ruby #{$PROGRAM_NAME} HOST PORT"
  exit 2
end

begin
  Timeout.timeout(LIMIT_SECONDS) { scenario(ARGV[0], ARGV[1].to_i) }
rescue Mismatch => e
  warn "#{CLIENT}: FAIL at #{$step}: #{e.message}"
  exit 1
rescue Timeout::Error
  warn "#{CLIENT}: FAIL at #{$step}: no answer within #{LIMIT_SECONDS} s"
  exit 1
rescue StandardError, ScriptError => e
  warn "#{CLIENT}: FAIL at #{$step}: unexpected error: #{e.class}: #{e.message}"
  exit 1
end
puts "#{CLIENT}: ok (#{$checks} checks) against #{ARGV[0]}:#{ARGV[1]}"
exit 0
