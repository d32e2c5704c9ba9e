# test/perl/ArcherPageEdit.pm: reading and damaging index pages on disk for
# the corruption tests (test/t/003_geo_corruption.pl,
# test/t/013_vector_corruption.pl).  The server must be stopped while
# blocks are written.  Little-endian fields, as on the machines we test on.
package ArcherPageEdit;

use strict;
use warnings;

use Exporter 'import';
use Fcntl qw(O_RDWR SEEK_SET);

our @EXPORT = qw($BLCKSZ u16 u32 set_u16 set_u32 read_block write_block);

our $BLCKSZ = 8192;

sub u16 { my ($page, $off) = @_; return unpack('v', substr($page, $off, 2)); }
sub u32 { my ($page, $off) = @_; return unpack('V', substr($page, $off, 4)); }
sub set_u16 { my ($page, $off, $v) = @_; substr($page, $off, 2) = pack('v', $v); return $page; }
sub set_u32 { my ($page, $off, $v) = @_; substr($page, $off, 4) = pack('V', $v); return $page; }

# one block of a relation file, as a byte string
sub read_block
{
	my ($path, $blkno) = @_;
	open(my $fh, '<:raw', $path) or die "open $path: $!";
	sysseek($fh, $blkno * $BLCKSZ, SEEK_SET) or die "seek: $!";
	my $page;
	sysread($fh, $page, $BLCKSZ) == $BLCKSZ or die "short read of block $blkno of $path";
	close($fh);
	return $page;
}

sub write_block
{
	my ($path, $blkno, $page) = @_;
	die 'page must be one block' unless length($page) == $BLCKSZ;
	sysopen(my $fh, $path, O_RDWR) or die "open $path: $!";
	sysseek($fh, $blkno * $BLCKSZ, SEEK_SET) or die "seek: $!";
	syswrite($fh, $page) == $BLCKSZ or die "short write to $path";
	close($fh);
}

1;
