# The hardened posture's exec wrapper: limits, identity and environment, then the command. See
# limits_exec.py. Core perl and no module at all (see workbench/platform/perl.py).

my ($status_fd, $prlimit_nr, $setgroups_nr, $setresgid_nr, $setresuid_nr, $prctl_nr, $faccessat_nr,
    $execve_nr, $unshare_nr) = splice(@ARGV, 0, 9);
open(my $status, '>&=', $status_fd) or exit 126;    # written with syswrite: no IO::Handle
fcntl($status, 2, 1);    # F_SETFD FD_CLOEXEC: the pipe closes when the command starts

sub report { syswrite($status, join('', map { "$_\0" } @_)); }
sub fail { report('error', $_[0]); exit($_[1] // 126); }
sub refused { fail("could not apply the hardened limits: $_[0]: $!"); }
sub slurp { open(my $f, '<', $_[0]) or return ''; local $/; return <$f>; }
sub spill {    # write a whole /proc file at once (buffered, an error would go unseen)
    open(my $f, '>', $_[0]) or return 0;
    my $wrote = syswrite($f, $_[1]) // return 0;
    $! = 5 if $wrote != length($_[1]);    # EIO: a short write sets no error of its own
    return $wrote == length($_[1]);
}

my (@limits, %kept, $uid, $own_userns);
while (@ARGV and $ARGV[0] ne '--') {
    my ($key, $value) = split /=/, shift(@ARGV), 2;
    if ($key eq 'rlimit') { push @limits, [split /:/, $value]; }
    elsif ($key eq 'uid') { $uid = $value + 0; }
    elsif ($key eq 'env') { $kept{$value} = 1; }
    elsif ($key eq 'userns') { $own_userns = 1; }
}
shift @ARGV;

# A user namespace of the run's own, the same uid and gid mapped to themselves: RLIMIT_NPROC
# set in it counts its processes only, not all of the user's. Where the kernel refuses one,
# the report says why and the limits are set all the same.
if ($own_userns) {
    my ($euid, $egid) = ($>, (split / /, $))[0]);
    if (syscall($unshare_nr, 0x10000000) != 0) {    # CLONE_NEWUSER
        report(userns => "refused: $!");
    } elsif (spill('/proc/self/setgroups', 'deny') and spill('/proc/self/uid_map', "$euid $euid 1")
        and spill('/proc/self/gid_map', "$egid $egid 1")) {
        report(userns => 'own', userns_id => readlink('/proc/self/ns/user') // '');
    } else {
        fail("could not map uid $euid into the run's user namespace: $!");
    }
}

for my $limit (@limits) {
    my ($name, $resource, $soft, $hard) = @$limit;
    syscall($prlimit_nr, 0, $resource + 0, pack('QQ', $soft, $hard), 0) == 0
        or refused("RLIMIT_$name $soft:$hard");
}
if (defined $uid) {    # no supplementary groups, then the group, then the user, for good
    syscall($setgroups_nr, 0, 0) == 0 or refused('setgroups');
    syscall($setresgid_nr, $uid, $uid, $uid) == 0 or refused("gid $uid");
    syscall($setresuid_nr, $uid, $uid, $uid) == 0 or refused("uid $uid");
}
syscall($prctl_nr, 38, 1, 0, 0, 0) == 0 or refused('no_new_privs');    # PR_SET_NO_NEW_PRIVS
report(limits => slurp('/proc/self/limits'), status => slurp('/proc/self/status'));

for my $name (keys %ENV) { delete $ENV{$name} unless $kept{$name}; }
my $program = $ARGV[0];
if (index($program, '/') < 0) {    # the first executable file on PATH, as the new uid sees it
    undef $program;
    my @folders = split /:/, $ENV{PATH} // '/bin:/usr/bin', -1;
    for my $folder (@folders ? @folders : ('')) {    # an empty PATH is the working folder
        my $candidate = ($folder eq '' ? '.' : $folder) . "/$ARGV[0]";
        if (-f $candidate and syscall($faccessat_nr, -100, $candidate, 1, 0) == 0) {    # X_OK
            $program = $candidate;
            last;
        }
    }
    fail("command not found: $ARGV[0]", 127) unless defined $program;
}
# execve itself: perl's exec (execvp) would run a file the kernel refuses to exec under /bin/sh.
my @environ = map { "$_=$ENV{$_}" } keys %ENV;
syscall($execve_nr, $program, pack('p*', @ARGV, undef), pack('p*', @environ, undef));
fail("command not found: $ARGV[0]", 127) if $! == 2;    # ENOENT
fail("cannot run $ARGV[0]: $!");
