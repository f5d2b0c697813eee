# The bubblewrap posture's loader: the sandbox's PID 1, under its seccomp filter; it starts the
# command. See loader.py. Core perl and no module at all (not even strict, warnings, Errno or a
# method call on a handle, which loads IO::File): each one loaded slows every run's start.

my ($status_fd, $prlimit_nr, $sendmsg_nr) = splice(@ARGV, 0, 3);
open(my $status, '>&=', $status_fd) or exit 126;    # written with syswrite: no IO::Handle
fcntl($status, 2, 1);    # F_SETFD FD_CLOEXEC: the pipe closes when the command starts

sub report { syswrite($status, join('', map { "$_\0" } @_)); }
sub fail { report('error', $_[0]); exit($_[1] // 126); }
sub slurp { open(my $f, '<', $_[0]) or return ''; local $/; return <$f>; }

my (@limits, @rules, @listen);
while (@ARGV and $ARGV[0] ne '--') {
    my ($key, $value) = split /=/, shift(@ARGV), 2;
    if ($key eq 'rlimit') { push @limits, [split /:/, $value]; }
    elsif ($key eq 'listen') { @listen = split /:/, $value; }
    else { push @rules, [$key, $value]; }
}
shift @ARGV;

for my $limit (@limits) {
    my ($resource, $soft, $hard) = @$limit;
    syscall($prlimit_nr, 0, $resource + 0, pack('QQ', $soft, $hard), 0) == 0
        or fail("cannot set rlimit $resource to $soft:$hard: $!");
}

if (@listen) {    # the proxy's listener on this loopback, handed to the workbench (SCM_RIGHTS)
    my ($port, $channel) = @listen;
    socket(my $listener, 2, 1, 0) or fail("cannot open the proxy listener: $!");
    bind($listener, pack('S n C4 x8', 2, $port, 127, 0, 0, 1))
        or fail("cannot bind 127.0.0.1:$port for the proxy: $!");
    listen($listener, 128) or fail("cannot listen on 127.0.0.1:$port: $!");
    my $byte = 'L';
    my $iov = pack('P1 Q', $byte, 1);
    my $rights = pack('Q i i i x4', 20, 1, 1, fileno($listener));    # cmsghdr: SOL_SOCKET, SCM_RIGHTS
    my $message = pack('Q L x4 P16 Q P24 Q i x4', 0, 0, $iov, 1, $rights, 24, 0);
    syscall($sendmsg_nr, $channel + 0, $message, 0) == 1
        or fail("cannot hand the proxy listener to the workbench: $!");
    close($listener);
    if (open(my $handle, '+<&=', $channel)) { close($handle); }
}

my $abi = syscall(444, 0, 0, 1);    # landlock_create_ruleset(NULL, 0, VERSION)
if ($abi > 0) {
    my $fs = (0x1FFF, 0x3FFF, 0x7FFF, 0x7FFF, 0xFFFF)[($abi > 5 ? 5 : $abi) - 1];
    my $read = 1 | 4 | 8;    # EXECUTE, READ_FILE, READ_DIR
    my $attr = $abi >= 6 ? pack('QQQ', $fs, 0, 3) : pack('Q', $fs);    # scoped: abstract unix, signals
    my $ruleset = syscall(444, $attr, length($attr), 0);
    $ruleset >= 0 or fail("cannot create the Landlock ruleset: $!");
    for my $rule (@rules) {
        my ($kind, $path) = @$rule;
        sysopen(my $dir, $path, 0x200000 | 0x80000) or fail("cannot open $path for Landlock: $!");
        my $beneath = pack('Q l', $kind eq 'rw' ? $fs : $read, fileno($dir));
        syscall(445, $ruleset, 1, $beneath, 0) == 0 or fail("cannot add the Landlock rule for $path: $!");
    }
    syscall(446, $ruleset, 0) == 0 or fail("cannot restrict the sandbox with Landlock: $!");
}

report(
    landlock => $abi > 0 ? $abi : 0,
    limits   => slurp('/proc/self/limits'),
    status   => slurp('/proc/self/status'),
    mounts   => slurp('/proc/self/mountinfo'),
    net      => slurp('/proc/self/net/dev'),
    ns       => join(' ', map { readlink("/proc/self/ns/$_") // '' } qw(user mnt pid ipc net uts cgroup)),
);

# This is the sandbox's PID 1: start the command, wait for it, then end what it left behind.
my $command = fork() // fail("cannot start the command: $!");
if ($command == 0) {
    exec { $ARGV[0] } @ARGV;
    fail("command not found: $ARGV[0]", 127) if $! == 2;    # ENOENT
    fail("cannot run $ARGV[0]: $!");
}
my $code;
while ((my $pid = wait()) != -1) {
    if ($pid == $command) { $code = $?; last; }
}
1 while waitpid(-1, 1) > 0;    # WNOHANG: reap what already ended
opendir(my $proc, '/proc') or fail("cannot list /proc: $!");
my $left = grep { /^\d+$/ && $_ != 1 } readdir($proc);
kill('KILL', -1) if $left;     # from PID 1: every other process of the namespace
1 while wait() != -1;
my $signal = $code & 127;
report(end => $signal ? "signal:$signal" : 'code:' . ($code >> 8), left => $left);
exit($signal ? 128 + $signal : $code >> 8);
