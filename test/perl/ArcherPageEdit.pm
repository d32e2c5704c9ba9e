# test/perl/ArcherPageEdit.pm: reading and damaging index pages on disk for
# the corruption tests (test/t/003_geo_corruption.pl,
# test/t/013_vector_corruption.pl, test/t/021_page_damage_fuzz.pl,
# test/t/024_vector_reachability.pl).  The server must be stopped while
# blocks are written.  Little-endian fields, as on the machines we test on.
package ArcherPageEdit;

use strict;
use warnings;

use Exporter 'import';
use Fcntl qw(O_RDWR SEEK_SET);

our @EXPORT = qw($BLCKSZ u16 u32 set_u16 set_u32 read_block write_block
  line_pointer normal_items);

our $BLCKSZ = 8192;

sub u16 { my ($page, $off) = @_; return unpack('v', substr($page, $off, 2)); }
sub u32 { my ($page, $off) = @_; return unpack('V', substr($page, $off, 4)); }
sub set_u16 { my ($page, $off, $v) = @_; substr($page, $off, 2) = pack('v', $v); return $page; }
sub set_u32 { my ($page, $off, $v) = @_; substr($page, $off, 4) = pack('V', $v); return $page; }

# Line pointer $n (from 1) of a page: (offset, length, flags); flags 1 is
# LP_NORMAL
sub line_pointer
{
	my ($page, $n) = @_;
	my $lp = u32($page, 24 + 4 * ($n - 1));
	return ($lp & 0x7fff, $lp >> 17, ($lp >> 15) & 3);
}

# The LP_NORMAL line pointers of a page, in order: [number, offset, length]
# each
sub normal_items
{
	my ($page) = @_;
	my @items;
	for my $n (1 .. (u16($page, 12) - 24) / 4)
	{
		my ($off, $len, $flags) = line_pointer($page, $n);
		push @items, [ $n, $off, $len ] if $flags == 1;
	}
	return @items;
}

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
