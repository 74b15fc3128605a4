"""``python -m chainer_hookext report|compare|peaks`` (docs/profile.md,
"`python -m chainer_hookext`").
"""

import argparse
import sys

from chainer_hookext.costs import peaks
from chainer_hookext.profile import compare as compare_module
from chainer_hookext.profile import page
from chainer_hookext.profile import run as run_module


def main(argv=None):
    """Runs the command line; returns its exit status."""
    parser = argparse.ArgumentParser(
        prog='python -m chainer_hookext',
        description='Pages and comparisons of runs profiled with '
        'chainer_hookext (the `out` folders of trainers).')
    commands = parser.add_subparsers(dest='command', required=True)
    report = commands.add_parser(
        'report', help='rebuild the profile page of a run',
        description='Writes the profile page of a finished or interrupted '
        'run from its files: LogReport\'s log, profile.json (written by '
        'ProfileReport) and timeline/*.json.gz.')
    report.add_argument('result', metavar='RESULT_DIR',
                        help='the trainer\'s `out` folder')
    report.add_argument('--out', metavar='FILE', help='where to write the '
                        'page (default: RESULT_DIR/profile.html)')
    compare = commands.add_parser(
        'compare', help='what changed between two runs',
        description='Prints each key of chainer_hookext (time, FLOPs, '
        'memory: per link, per phase, per function type) in both runs, '
        'each family\'s largest change first, per example too when the '
        'batch sizes differ, changes within the runs\' own spread marked; '
        '--out writes them as a page (.html) or draws the largest relative '
        'changes (.png).')
    compare.add_argument('a', metavar='RESULT_A')
    compare.add_argument('b', metavar='RESULT_B')
    compare.add_argument('--top', type=int, default=10,
                         help='changes printed per family (default 10)')
    compare.add_argument('--out', metavar='FILE', help='also write the '
                         'changes to this file: a page (.html) or a picture '
                         '(.png)')
    measure = commands.add_parser(
        'peaks', help='measure the roofline\'s peaks again',
        description='Measures the peaks of TimedLinks(flops=True)\'s '
        f'roofline again and keeps them in {peaks.cache_path()} '
        f'(${peaks.ENVIRONMENT} names another file).')
    measure.add_argument('--device', type=int, metavar='ID',
                         help='a CUDA device id (default: the CPU)')
    measure.add_argument('--dtype', default='float32',
                         choices=('float16', 'float32', 'float64'))
    args = parser.parse_args(argv)
    if args.command == 'peaks':
        print(peaks.measure_again(args.device, args.dtype))
        return 0
    try:
        if args.command == 'report':
            path = page.write(run_module.from_folder(args.result), args.out)
            print(f'Profile page written to {path}')
        else:
            if args.out:
                compare_module.check_out(args.out)
            a = run_module.from_folder(args.a)
            b = run_module.from_folder(args.b)
            compare_module.check_comparable(a, b)
            print('A: ' + compare_module.describe(a))
            print('B: ' + compare_module.describe(b))
            found = compare_module.changes(a, b)
            compare_module.print_changes(found, sys.stdout, args.top)
            if args.out:
                compare_module.write(a, b, found, args.out, args.top)
                print(f'Changes written to {args.out}')
    except (run_module.RunError, ImportError, OSError) as e:
        print(f'python -m chainer_hookext {args.command}: {e}',
              file=sys.stderr)
        return 2
    return 0
