# The Ruby client beaneater (Debian's ruby-beaneater) against a fresh server.
# Usage: ruby tests/system/clients/beaneater.rb HOST PORT
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

STATS_KEYS = %w[
  current-jobs-urgent current-jobs-ready current-jobs-reserved current-jobs-delayed
  current-jobs-buried cmd-put cmd-reserve cmd-delete cmd-stats job-timeouts total-jobs
  max-job-size current-tubes current-connections total-connections pid version uptime
].freeze
STATS_JOB_KEYS = %w[
  id tube state pri age delay ttr time-left file reserves timeouts releases buries kicks
].freeze
STATS_TUBE_KEYS = %w[
  name current-jobs-urgent current-jobs-ready current-jobs-reserved current-jobs-delayed
  current-jobs-buried total-jobs current-using current-watching current-waiting cmd-delete
  cmd-pause-tube pause pause-time-left
].freeze

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
  fields 'stats-job', j1, 'id' => id1, 'tube' => TUBE, 'state' => 'ready', 'pri' => 10, 'delay' => 0,
                          'ttr' => 30, 'reserves' => 0

  step 'stats-tube (one ready)'
  t1 = tube.stats
  has_keys 'stats-tube', t1, STATS_TUBE_KEYS
  fields 'stats-tube', t1, 'name' => TUBE, 'current-jobs-urgent' => 1, 'current-jobs-ready' => 1,
                           'current-jobs-reserved' => 0, 'current-jobs-delayed' => 0,
                           'current-jobs-buried' => 0, 'total-jobs' => 1, 'current-using' => 1,
                           'current-watching' => 1

  step 'reserve'
  r = bc.tubes.reserve
  eq 'reserve', job(r), [id1, body1]
  step 'stats-job (reserved)'
  fields 'stats-job', r.stats, 'state' => 'reserved', 'reserves' => 1
  ok 'job reports reserved', r.reserved?
  step 'stats-tube (one reserved)'
  fields 'stats-tube', tube.stats, 'current-jobs-ready' => 0, 'current-jobs-reserved' => 1

  step 'touch'
  eq 'touch status', r.touch[:status], 'TOUCHED'
  step 'stats-job (after touch)'
  jt = r.stats
  fields 'stats-job', jt, 'state' => 'reserved'
  ok 'stats-job time-left <= ttr after touch', jt.time_left.to_i <= 30, jt.time_left

  step 'release with delay'
  eq 'release status', r.release(pri: 20, delay: 60)[:status], 'RELEASED'
  step 'stats-job (delayed)'
  fields 'stats-job', r.stats, 'state' => 'delayed', 'pri' => 20, 'delay' => 60, 'releases' => 1
  step 'peek-delayed'
  eq 'peek-delayed', job(tube.peek(:delayed)), [id1, body1]
  step 'peek-ready (none)'
  eq 'peek-ready with only a delayed job', tube.peek(:ready), nil
  step 'stats-tube (one delayed)'
  fields 'stats-tube', tube.stats, 'current-jobs-delayed' => 1, 'current-jobs-ready' => 0,
                                   'current-jobs-reserved' => 0

  step 'kick (delayed)'
  k = tube.kick(5)
  eq 'kick status', k[:status], 'KICKED'
  eq 'kick count', k[:id].to_s, '1'
  step 'stats-job (kicked)'
  fields 'stats-job', r.stats, 'state' => 'ready', 'kicks' => 1

  step 'reserve (again)'
  r = bc.tubes.reserve
  eq 'reserve', job(r), [id1, body1]
  step 'bury'
  eq 'bury status', r.bury(pri: 7)[:status], 'BURIED'
  step 'stats-job (buried)'
  fields 'stats-job', r.stats, 'state' => 'buried', 'pri' => 7, 'buries' => 1
  step 'peek-buried'
  eq 'peek-buried', job(tube.peek(:buried)), [id1, body1]
  step 'stats-tube (one buried)'
  fields 'stats-tube', tube.stats, 'current-jobs-buried' => 1, 'current-jobs-ready' => 0,
                                   'current-jobs-reserved' => 0

  step 'put (second job)'
  body2 = 'second job'
  id2 = tube.put(body2, pri: 100, delay: 0, ttr: 30)[:id].to_s
  eq 'second put id', id2, (id1.to_i + 1).to_s
  step 'kick (buried only)'
  eq 'kick count with a buried and a ready job', tube.kick(5)[:id].to_s, '1'
  step 'stats-job (kicked from buried)'
  fields 'stats-job', bc.jobs.find(id1).stats, 'state' => 'ready', 'kicks' => 2, 'pri' => 7
  step 'stats-tube (two ready)'
  fields 'stats-tube', tube.stats, 'current-jobs-buried' => 0, 'current-jobs-ready' => 2,
                                   'current-jobs-urgent' => 2, 'total-jobs' => 2

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
  fields 'stats-job', r.stats, 'tube' => OTHER, 'state' => 'reserved'
  step 'delete (other tube)'
  eq 'delete status', r.delete[:status], 'DELETED'
  step 'ignore other tube'
  bc.tubes.ignore(OTHER)
  step 'list-tubes-watched (after ignore)'
  eq 'list-tubes-watched', bc.tubes.watched.map(&:name), [TUBE]

  step 'stats-tube (end)'
  fields 'stats-tube', tube.stats, 'current-jobs-urgent' => 0, 'current-jobs-ready' => 0,
                                   'current-jobs-reserved' => 0, 'current-jobs-delayed' => 0,
                                   'current-jobs-buried' => 0, 'total-jobs' => 2, 'cmd-delete' => 2,
                                   'current-watching' => 1, 'current-using' => 0
  step 'stats (end)'
  s1 = server_stats(bc)
  has_keys 'stats', s1, STATS_KEYS
  fields 'stats', s1, 'current-jobs-ready' => s0['current_jobs_ready'],
                      'current-jobs-buried' => s0['current_jobs_buried'],
                      'current-jobs-delayed' => s0['current_jobs_delayed'],
                      'current-jobs-reserved' => s0['current_jobs_reserved'],
                      'total-jobs' => s0['total_jobs'].to_i + 3,
                      'cmd-put' => s0['cmd_put'].to_i + 3

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
