"""The CLI's one-line failures (usage errors: exit 2) and warnings, worded once: the sibling of
render/text.py, which holds the notes around tables; the two are the one home of what atsdbench
prints.  Each is a str.format template named by what it says; with its fields filled, a line is at
most text.WIDTH columns after "atsdbench: warning: " (tests/render/test_messages.py).  Grouped by the
module that raises it."""

# ---- atsdbench (the Python API: scaling) ----

API_NO_THREADS_AXIS = '{name}: no threads axis of 2 or more thread counts'
API_UNNAMED = 'the result'  # a result that came from no file

# ---- analysis.compare ----

CMP_METRIC_MUST_MEAN_MEDIAN = '--metric must be mean or median (got {metric!r})'
CMP_TEST_MUST_WELCH_STUDENT = '--test must be welch, student or mannwhitney (got {test!r})'
CMP_TEST_DOES_NOT_TEST = '--test {test} does not test the {metric} (t-tests: mean; mannwhitney: median)'
CMP_CONFIDENCE_MUST = '--confidence must be one of 80, 90, 95, 98, 99, 99.5 (got {confidence:g})'
CMP_UNIT_MUST_AUTO_ROUND = '--unit must be auto, round, pass or run (got {unit!r})'
CMP_UNIT_RUN_NEEDS_REPLICATE = '--unit run needs replicate runs (a.json,b.json,...) on at least one side'
CMP_TEST_WELCH_NEEDS_REPLICATE = '--test welch needs replicate runs on every side (one side only: --test student)'
CMP_UNIT_POOLS_REPLICATE_RUNS = '--unit {effective} pools the {plural} of replicate runs: the CI leaves out their drift'
CMP_ADJUST_MUST_HOLM_NONE = '--adjust must be holm or none (got {adjust!r})'
CMP_COMPARE_NEEDS_BASELINE_FILE = 'compare needs a baseline file and at least one new file (or one file with --by AXIS)'
CMP_FILE_HAS_SINGLE_ROUND = 'a file has a single round: the CI over passes ignores between-round variance'
CMP_NO_CI = '{value} {places}, {label}: no CI ({why})'
CMP_SIDES_TIME_DIFFERENT_CALLS = "the sides time different calls ({ops}): the speedup is not the kernel's"
CMP_NO_NOISE_PROFILE_BASELINE = 'no noise profile for the baseline {value}: none used, no verdict ({calibrate})'
CMP_ROUNDS_SPREAD_UNLIKE_PROFILE = '{value}: its rounds spread unlike its profile {name} at {places} (p < {check_level:g})'
CMP_COMPARES_CELLS_FILE_EACH = '--by compares the cells of one file: give one file (got {n_files})'
CMP_TAKES_RESULT_FILE_NOT = '--by takes one result file, not replicate runs (a.json,b.json)'
CMP_TEST_FILES_COMPARED_EACH = '--test {test} is for files compared with each other (--by: paired t, wilcoxon)'
CMP_PAIRS_ROUNDS_UNIT_DOES = '--by pairs rounds: --unit {unit} does not apply (leave it out)'
CMP_HAS_NO_AXES_MEASURED = '{name} has no axes to compare --by (run e.g. --bystanders 0,1 first)'
CMP_HAS_NO_AXIS_AXES = '{name} has no axis {axis} (its axes: {axes})'
CMP_NO_CELL_BEYOND_FIRST = '{value}: no cell of {axis} but the first has a measured pass'
CMP_ROUND_MEASURED_CELL_ONLY = '{value} {places}, {label}: {lost} round{value2} measured one cell only: not paired'
CMP_CONFIDENCE_NOT_NUMBER = '--confidence {confidence!r} is not a number'
CMP_NAMES_NO_FILE_JSON = '{item!r} names no file (a.json,b.json = replicate runs of one side)'
CMP_HAS_EMPTY_FILE_NAME = '{item} has an empty file name (name {value} of {n_names}: a stray comma?)'
CMP_LABELS_GIVES_LABELS_FILES = '--labels gives {n_labels} labels for {n_groups} files'
CMP_PROFILE_FILES_COMPARED_EACH = '--profile is for files compared; --by pairs the cells of one run by round'
CMP_MISSING_FROM_NOT_COMPARED = '{what} is missing from {name}: not compared'
CMP_UNIT_PASS_EVERY_PASS = '--unit pass: every pass is an observation; the CI ignores between-round variance'
CMP_PROFILE = '--profile {why}'
CMP_NO_NOISE_PROFILE_THIS = 'no noise profile for {value} ({get} on {get2}): no verdict ({calibrate})'
CMP_NOT_AXIS_AXES = '--by {axis!r} is not an axis (axes: {axes})'
CMP_LABELS_GIVES_LABELS_VALUES = '--labels gives {n_labels} labels for the {n_values} values of {axis}'
# the tables find a side's column (and compare --by threads its thread count) by its label
CMP_LABELS_REPEAT = '--labels: {label} names two sides; give each its own'
CMP_FILE_HAS_NO_TIMED_PASS = '{path} has no measured pass (its run ended before the first timed one)'
CMD_PROGRESS_MUST = '--progress must be never, auto or always (got {value!r})'
LAVA_LOG_CANNOT = '{path}: {why}'
LAVA_LOG_NO_END = 'result {name}: its end marker is missing (the job was cut off): left out'
LAVA_LOG_DAMAGED = 'result {name} in the log is damaged ({why}): left out'
LAVA_LOG_NONE = '{path}: no whole atsdbench result between markers ({n} found whole)'
CMD_SCALING_NOT_LAVA = 'show --scaling has no lava format (lava gives one case per stride): text, markdown or csv'
CMP_CELL_HAS_NO_MEASURED = 'the {value} cell{of_group} has no measured pass: nothing to compare with'
CMP_CELL_HAS_NO_MEASURED_2 = 'the {value} cell{of_group} has no measured pass: not compared'
CMP_FILES_MEASURE_DIFFERENT_RATES = 'the files measure different rates ({units}): one cannot be compared with another'

# ---- analysis.counts ----

COUNTS_EMULATED_SIDES = "{labels}: emulated (qemu-tcg): rates get no verdict"
COUNTS_RAN_EMULATED_GUEST_QEMU = '{value} ran emulated (qemu-tcg): its rates get no verdict'

# ---- analysis.model ----

MODEL_HAS_NO_HOST_RECORD = '{value} has no {replace} in its host record: no page counts'
MODEL_REPLICATE_RUNS_MEASURE_SAME = '{name}: {value} has cells and {value2} none: not replicates'
MODEL_HAS_NO_MEASURED_PASS = '{name}{value} has no measured pass'
MODEL_FULL_FLUSHES_PER_CALL = '{pages_text}: {full:.2f} full flushes per call: its regime is undecided'
MODEL_REPLICATE_FILES_COUNT_PAGES = '{name}: the replicate files count pages in different sizes ({listing})'
MODEL_HAS_AXES_CELLS_HAS = '{with_axes} has axes (cells) and {plain} has none: no cell compared'
MODEL_HAS_NO_CELL_NOT = '{file}: has no cell {cell}: not compared'
MODEL_CELL_NOT_NOT_COMPARED = '{file}: cell {cell} is not in {file2}: not compared'
MODEL_COUNTS_PAGES_PAGES_PER = '{file} counts {page_bytes} pages and {file2} {page_bytes2} pages{where}: model each alone'

# ---- analysis.noise ----

NOISE_HAS_SUB_RUN_BETWEEN = '{value} has one sub-run: its between-run variance cannot be estimated'
NOISE_NO_STRIDE_HAS_SUB = '{value}: no stride has the sub-runs and rounds a profile needs'

# ---- campaign.actions ----

CAMPAIGN_NO_OUTPUT_OPTION = 'campaign names its result files (DIR/NAME/BOOT_ID.json): no -o in the run options'
CAMPAIGN_ALREADY = '{directory} is a campaign already: campaign status {directory} (or give a new DIR)'
CAMPAIGN_INIT_NOT_EMPTY = 'campaign init {directory}: not an empty directory (a campaign gets one of its own)'
CAMPAIGN_INIT_NEEDS_KERNELS = 'campaign init needs two or more --kernel NAME=IMAGE (the kernels to compare)'
CAMPAIGN_BOOTS_RANGE = '--boots must be 1 to 1000 (got {boots})'  # campaign init and guest --boots
CAMPAIGN_SCHEDULE_MUST = '--schedule must be alternate or abba (got {schedule!r})'
CAMPAIGN_METHOD_MUST = '--method must be kexec, grub or manual (got {method!r})'  # and campaign.methods
CAMPAIGN_KERNEL_NAMES_DIFFER = '--kernel names must differ (got {names})'
CAMPAIGN_RUNNER_MUST = '--runner must be run or atsd (got {runner!r})'
CAMPAIGN_INIT_CANNOT_MAKE = 'campaign init {directory}: cannot make it: {why}'

# ---- campaign.methods ----

GRUB_CANNOT_READ = '--method grub: cannot read {path}: {why}'
GRUB_NO_ENTRY = '--method grub: no entry in {path} boots {image}: run update-grub'
GRUB_NO_ENTRY_ANY_MORE = '--method grub: no entry in {path} boots {image} now (an update-grub?)'
GRUB_REBOOT_FAILED = 'grub-reboot {entry!r} failed (exit {rc}): {why}'
GRUB_NO_MESSAGE = 'no message'
CAMPAIGN_CANNOT_REBOOT = 'could not reboot (systemctl reboot, reboot): reboot by hand; the next kernel is set'
KEXEC_REBOOT_FAILED = 'kexec: the reboot into the loaded kernel failed: {why}'

# ---- campaign.plan ----

KERNEL_SPEC_FORM = '--kernel {spec!r}: give NAME=IMAGE[,initrd=FILE][,append=ARGS]'
KERNEL_SPEC_NAME = '--kernel {spec!r}: the name {name!r} must be letters, digits and ._+- (at most 64)'
KERNEL_SPEC_PART = '--kernel {spec!r}: {part!r} is not initrd=FILE, append=ARGS or release=R'
KERNEL_SPEC_NO_IMAGE = '--kernel {spec!r}: no image'
KERNEL_NOT_TOLD_APART = '--kernel {a} and {b} both run as {release}{version}: a boot could not be told apart'
KERNEL_NOT_A_FILE = '--kernel {kernel}: {field} {path} is not a regular file'
KERNEL_RELEASE_NOT_IMAGES = '--kernel {kernel}: release={given}, but the image says {release} (its uname -r)'
KERNEL_IMAGE_CUT_SHORT = '--kernel {kernel}: {path} is cut short ({have} of {want} bytes)'
KERNEL_NO_RELEASE = '--kernel {kernel}: {path} says no release: add ,release=R (its uname -r)'

# ---- campaign.step ----

STEP_CANNOT_READ = 'campaign step: cannot read {path}: {why}'
STEP_CANNOT_LOCK = 'campaign {directory}: cannot lock it: {why}'
STEP_ANOTHER_RUNNING = 'campaign {directory}: another step is running{pid}: not running a second'
STEP_NO_ATSD = 'campaign step: the plan runs atsd (--runner atsd): no atsd on PATH (make -C csrc)'
STEP_BOOT_USED = 'campaign {directory}: boot {boot} already used ({event}): reboot for the next'
STEP_STUCK = 'campaign {directory}: {stuck} missed {misses} slots in a row (no boot?): boot it by hand'

# ---- campaign.unit ----

UNIT_CANNOT_WRITE = 'campaign install: cannot write {path}: {why} (as root?)'
UNIT_NO_SYSTEMCTL = 'campaign install: no systemctl here: run campaign step DIR at each boot (cron @reboot)'
UNIT_UNSAFE_PATH = 'campaign install: a unit cannot hold {path!r} (quote, backslash, control)'
UNIT_COMMAND_FAILED = 'campaign install: {command} failed: {why}'

# ---- commands ----

CMD_DIRECTORY_NOT_CAMPAIGN = '{path} is a directory: give result files, or one campaign directory alone'
CMD_CAMPAIGN_NO_FINISHED_BOOT = 'campaign {directory}: {names} has no finished boot yet (campaign status {directory})'
CMD_FORMAT_MUST_OR_LAVA = '--format must be one of {renderers} or lava (got {format!r})'
CMD_CAMPAIGN_NEEDS_ACTION = 'campaign needs an action: init, step, status or install (atsdbench campaign -h)'
CMD_CAMPAIGN_MADE_BY_GUEST = 'campaign {directory} was made by guest --boots (host-driven qemu boots): no step to run'
CMD_GUEST_BOOTS_KERNELS = 'guest --boots alternates two or more kernels: give --kernel A --kernel B'
CMD_GUEST_BOOTS_ONE_RUN = 'guest --boots: one result file per boot, one run (no --command, --tracepoints, second --)'
CMD_GUEST_BOOTS_NOT_EMPTY = 'guest --boots: -o {directory} is not empty (a campaign gets a directory of its own)'
CMD_GUEST_MISSED_BOOT = 'guest {name}: {why} (a missed boot)'
CMD_CALIBRATE_FROM_TAKES_PLAN = 'calibrate --from takes the plan from its file: no run options (got --{value})'
CMD_LAVA_NO_COUNTS = '--format lava prints the rates alone: leave --counts out'
CMD_FORMAT_MUST = '--format must be one of {renderers} (got {format!r})'
CMD_FORMAT_MUST_2 = '--format must be one of {formats} or lava (got {format!r})'
CMD_PAGE_SIZE_CEILING_SIZE = '--page-size, --ceiling and --size go with --table'
CMD_IMPORT_TABLE_NEEDS_PAGE = "import --table needs --page-size (the table's machine's: 64K POWER9, 4K x86)"
CMD_CEILING_MUST_LEAST = '--ceiling must be at least 1 (got {value})'
CMD_CEILING_PAGE_COUNT_MOST = '--ceiling is a page count: at most 2^30 (got {value})'
CMD_PAGE_SIZE_NOT_POWER = '--page-size {page_size} is not a power of two (a page is 4K, 16K, 64K, ...)'
CMD_TIMEOUT_MUST_LEAST = '--timeout must be at least 1 s (got {given})'
CMD_TIMEOUT_NOT_LONGER_THAN = "--timeout {given} is not longer than the runs' --gap and --spread sleeps alone ({waits:g} s)"
CMD_GUEST_NEEDS_KERNEL_IMAGE = 'guest needs --kernel IMAGE (one per kernel to boot)'
CMD_GUEST_EACH_STARTS_RUN = 'guest: an empty run between two `--` (each starts a run)'
CMD_COMMAND_NEEDS_SHELL_COMMAND = '--command needs a shell command line to run in the guest'
CMD_MEM_MUST_SIZE_SUCH = '--mem must be a size such as 2G and --smp at least 1 (got {mem!r}, {smp})'
CMD_TRACE_BUFFER_MUST_SIZE = "--trace-buffer must be a size of at least 4K per CPU, such as 8M (got {trace_buffer!r})"
CMD_ACCEL_MUST_TCG_KVM = '--accel must be tcg or kvm (got {accel!r})'
CMD_GUEST_KERNEL_LOGGED_CONSOLE = 'guest {label}: the kernel logged {value!r} (the console has it all)'
CMD_CALIBRATE_MEASURES_FIXED_DESIGN = 'calibrate measures a fixed design: --until would stop on the noise it estimates'
CMD_CALIBRATE_RUNS_SUB_RUN = 'calibrate --runs {runs}: one sub-run has no between-run variance (give 2+; default {calibrate_runs})'
CMD_CALIBRATE_ROUNDS_ROUND_SUB = 'calibrate --rounds {rounds}: one round a sub-run has no within-run variance (give 2+)'
CMD_EXTRA_PASSES_NO_WORKLOAD = "{option} adds passes of an --op; --workload's loop has none: give one of them"
CMD_FILES_HAVE_NO_INVALIDATION = 'the files have no invalidation counts: measured without tracing'
CMD_ACCEL_KVM = '--accel kvm: {problem}'
CMD_O_CANNOT_MAKE_DIRECTORY = '-o {output}: cannot make the directory: {strerror}'
CMD_ACCEL_KVM_RUNS_GUESTS = "--accel kvm runs guests of this machine's own arch ({host_arch}): {image} is {arch}"
CMD_GUEST_NOT_BROUGHT_HOME = 'guest {label}: not brought home from /out: {left}'
CMD_GUEST_NO_SUCH_TRACEPOINT = 'guest {label}: {which}{absent}: no such tracepoint (not traced)'
CMD_GUEST_TRACE_LOST_EVENTS = 'guest {label}: {which}trace lost {lost} events (grow --trace-buffer)'

# ---- data.atsd_output ----

ATSD_WORKLOAD_NOT_LIST = '{name}: config workload={value} is not a list of tlb_flush1/2/3'
ATSD_SAMPLE_NO_LOOPS = "{name}: a workload's sample has no loops=, or not its calls"
ATSD_VERIFY_OP = "{name}: a verify record's op={value} is not one of {ops}"
ATSD_VERIFY_CELL = '{name}: a verify record of a run with axes has no cell, or one out of range'
ATSD_OUTPUT_NOT_WHOLE_NUMBER = '{where}: {key}={value} is not a whole number'
ATSD_OUTPUT_OUT_RANGE = '{where}: {key}={value} is out of range ({lo} to {hi})'
ATSD_OUTPUT_NOT_NUMBER_SECONDS = '{where}: {key}={value} is not a number of seconds'
ATSD_OUTPUT_NOT_COMMA_SEPARATED_LIST = '{where}: {key}={value} is not a comma-separated list of whole numbers'
ATSD_OUTPUT_WITHOUT = '{where}: {kind} without {missing}'
ATSD_OUTPUT_NOT_ATSD_OUTPUT_FIRST = "{name} is not atsd output (its first line must be 'atsd-output 1' or 2)"
ATSD_OUTPUT_RECORD_NEEDS_2 = "{where}: a {kind} record needs 'atsd-output 2' (atsd --breakdown) as the first line"
ATSD_OUTPUT_TRACE_BEFORE_BREAKDOWN = '{where}: a trace line before any breakdown record'
ATSD_OUTPUT_BREAKDOWN_OP = "{where}: breakdown op={value} is not one of {ops}"
ATSD_OUTPUT_BREAKDOWN_CELL = '{where}: a breakdown record of a run with axes has no cell, or one out of range'
ATSD_OUTPUT_HAS_NO_HOST_CONFIG = '{name} has no host or config line'
ATSD_OUTPUT_CONFIG_PAGES_BYSTANDERS_NOT = '{name}: config pages={pages} or bystanders is not a valid list'
ATSD_OUTPUT_CONFIG_OP_NOT_LIST = '{name}: config op={get} is not a list of {ops}'
ATSD_OUTPUT_NOT_LIST_CPUS_BELOW = '{where}: {key}={text} is not a list of CPUs below {max_cpus}'
ATSD_OUTPUT_NOT_KEY_VALUE = '{where}: {part} is not key=value'
ATSD_OUTPUT_UNKNOWN_RECORD = '{where}: unknown record {kind}'
ATSD_OUTPUT_SAMPLE_THREAD_NS_THREAD = "{name}: a sample's thread columns disagree on the thread count"
ATSD_OUTPUT_SAMPLE_RUN_NOT_CONFIG = "{name}: a sample's run={run} is not one of config runs={runs}"
ATSD_OUTPUT_SAMPLE_RUN_AXES_HAS = '{name}: a sample of a run with axes has no cell, or one out of range'

# ---- data.campaign ----

CAMPAIGN_PLAN_BAD = '{path}: {what} (not an atsdbench campaign plan, or damaged)'
CAMPAIGN_NOT_DIRECTORY = '{directory} is not a campaign directory (no {plan}: atsdbench campaign init makes one)'
CAMPAIGN_EVENT_SKIPPED = '{path}: skipped ({why})'
CAMPAIGN_NOT_EVENT = '{path}: skipped (not a campaign event)'
CAMPAIGN_EVENT_COPY = '{path} is a copy of {first}: read once'
CAMPAIGN_DUPLICATE_DONE = '{path}: a second done event of boot {boot}: counted once'
CAMPAIGN_COMPLETE_UNUSED = '{path} is complete, but its run failed: not compared'
CAMPAIGN_NOT_IN_JOURNAL = "{path} is not in the campaign's journal: left out"

# ---- data.files ----

FILES_OVER_MIB_LARGER_THAN = '{path} is over {value} MiB: larger than any file atsdbench reads'
FILES_OUTPUT_FILE_NAME_EMPTY = 'the output file name is empty'
FILES_OUTPUT_NOT_REGULAR_FILE = 'output {path} is {kind}, not a regular file: refusing to replace it'
FILES_CANNOT_WRITE_OUTPUT_NO = 'cannot write output {path}: no directory {folder}'
FILES_CANNOT_WRITE_OUTPUT = 'cannot write output {path}: {denied}'
FILES_CANNOT_WRITE_OUTPUT_FREE = 'cannot write output {path}: {mib} free, about {mib2} needed'
FILES_CANNOT_WRITE_OUTPUT_2 = 'cannot write output {path}: {strerror}'
FILES_NO_SUCH_FILE = '{path}: no such file'
FILES_DIRECTORY = '{path} is a directory'
FILES_MESSAGE = '{path}: {strerror}'
FILES_NOT_JSON_NESTED_TOO = '{path} is not {what} (JSON nested too deeply)'
FILES_NOT_ENOUGH_MEMORY_READ = '{path}: not enough memory to read it ({value} MiB)'
FILES_NOT_JSON = '{path} is not JSON ({shorten})'
FILES_CANNOT_WRITE_OUTPUT_LOCK = 'cannot write output {path}: {strerror} (its lock file {lock})'
FILES_CANNOT_WRITE_OUTPUT_LOCKING = 'cannot write output {path}: {strerror} (locking {lock})'
FILES_NOT_REGULAR_FILE_ATSDBENCH = '{path} is {kind}, not a regular file: atsdbench reads only files'
FILES_OUTPUT_BEING_WRITTEN_ANOTHER = 'output {path} is being written by another atsdbench{value}'

# ---- data.profile ----

PROFILE_NOT_ATSDBENCH_NOISE_PROFILE = '{path} is not an atsdbench noise profile (atsdbench calibrate makes one)'
PROFILE_HAS_NO_SCHEMA_VERSION = '{path} has no schema_version (a whole number from 1)'
PROFILE_HAS_SCHEMA_VERSION_THIS = '{path}: schema_version {cut} is newer than {profile_version} (upgrade)'
FIELD_PROBLEM = '{path}: {value} {problem}'
PROFILE_ENTRIES_STRIDE_BYTES_NOT = '{path}: entries[{i}].stride_bytes is {stride_bytes}, not one of plan.strides'
PROFILE_ENTRIES_HAS_NO_DEGREES = '{path}: entries[{i}] has no degrees of freedom'
PROFILE_PROFILE_DESCRIBES_NO_SIDE = '--profile {value} {text}: it describes no side'
PROFILE_PROFILE_BOTH_DESCRIBE_GIVE = '--profile {path} and {path2} both describe {value}: give one per kernel'

# ---- data.published_table ----

PUBLISHED_TABLE_NOT_PLAIN_ASCII_TYPE = '{name}: {what} {word} is not plain ASCII (type it as {loose})'
PUBLISHED_TABLE_HAS_NO_TABLE_EXPECTED = "{name} has no table: 2+ rows of 'STRIDE GB/S [GB/S]'"
PUBLISHED_TABLE_HAS_TABLES_ROWS_KEEP = '{name} has {n_starts} tables of {top} rows; keep the one to import'
PUBLISHED_TABLE_HAS_RATE_NOT_FINITE = '{where} has a rate of {text}: not a finite number of GB/s'
PUBLISHED_TABLE_HAS_RATE_GB_MORE = '{where} has a rate of {text} GB/s, more than a pass can measure'
PUBLISHED_TABLE_HAS_NEGATIVE_RATE = '{where} has a negative rate ({text})'
PUBLISHED_TABLE_HAS_RATE_ZERO = '{where} has a rate of zero'
PUBLISHED_TABLE_STRIDE_APPEARS_TWICE_TABLE = '{name}: stride {stride} appears twice in the table'
PUBLISHED_TABLE_SPEEDUP_COLUMN_DOES_NOT = '{name}: at {stride} the speedup column ({value}) is not {value2} -> {value3}'
PUBLISHED_TABLE_STRIDE_NOT_MULTIPLE_PAGE = '{name}: stride {stride} is not a multiple of the page size {page_size}'
PUBLISHED_TABLE_SIZE_NOT_MULTIPLE_TABLE = "--size {size} is not a multiple of the table's stride {stride}"
PUBLISHED_TABLE_IMPORT_TABLE_GIVE_O = 'import --table -: give -o, there is no file name to derive one from'
PUBLISHED_TABLE_STRIDE_HAS_RATE_GB = '{name}: stride {stride} at {gbps:g} GB/s: {value} than --size {size} allows ({value2:.3g} to {size2:.3g})'

# ---- data.results ----

RESULTS_RESULT_WAS_SAVED_INSTEAD = '{why}; the result was saved to {rescue} instead'
RESULTS_NOT_ATSDBENCH_RESULT_FILE = '{path} is not an atsdbench result file'
RESULTS_HAS_SCHEMA_VERSION_THIS = '{path}: schema_version {cut} is newer than {schema_version} (upgrade)'

# ---- measure.ceiling ----

CEILING_CEILING = '--ceiling: {problem}'
CEILING_CEILING_CANNOT_WRITE_ROOT = '--ceiling: cannot write {path}: {strerror} (root needed)'
CEILING_CEILING_CANNOT_WRITE = '--ceiling: cannot write {refusal}'

# ---- measure.counters ----

COUNTERS_TRACE = '--trace: {trace_error}'

# ---- measure.guest ----

GUEST_O_NEEDS_DIRECTORY_EMPTY = '-o needs a directory (got an empty name)'
GUEST_O_MIB_FREE_FILE = '-o {path}: {value:.1f} MiB free, guests need about {value2:.0f} MiB'
GUEST_TRACEPOINTS_EACH_TRACEPOINT_SUBSYSTEM = '--tracepoints {value!r}: {name!r} is not SUBSYSTEM/EVENT (as tracefs names it)'
GUEST_ATSD_HAS_NO_OPTION = 'atsd has no option {shown} (atsd -h lists them)'
GUEST_GUEST_OWN_NAMES_RESULT = "{shown} is guest's own: it names the result files (-o DIR before --)"
GUEST_ATSDBENCH_RUN_ONLY_STANDALONE = "{shown} is `atsdbench run`'s only: atsd has no {shown}{hint}"
GUEST_VALUES_SPACES_DO_NOT = "--{name} {value!r}: values with spaces do not reach the guest's atsd"
GUEST_O = '-o {path}: {strerror}'
GUEST_TRACEPOINTS_NEEDS_VALUE_EVENT = '--tracepoints needs a value (EVENT,...: tracefs names such as powerpc/tlbie)'
GUEST_RUN_OPTION_NOT_OPTION = 'run option {word!r} is not an option (atsd takes no file names)'
GUEST_TAKES_NO_VALUE = '{shown} takes no value (got {value!r})'
GUEST_NEEDS_VALUE = '{shown} needs a value ({metavar})'
GUEST_O_SYMBOLIC_LINK_NOTHING = '-o {path}: {probe} is a symbolic link to nothing'

# ---- measure.guest_image ----

GUEST_IMAGE_KERNEL_NOT_KERNEL_IMAGE = '--kernel {path} is not a kernel image (no vmlinux, bzImage or arm64 Image)'
GUEST_IMAGE_KERNEL_ELF_KERNEL_MACHINE = '--kernel {path} is an ELF kernel for machine {machine}, which guest does not boot'
GUEST_IMAGE_KERNEL_CUT_OFF_BOOT = '--kernel {path} is cut off: header says {need} bytes, file has {size}'
GUEST_IMAGE_MACHINE_MUST = '--machine must be one of {machines} (got {machine!r})'
GUEST_IMAGE_KERNEL_KERNEL_MACHINE_BOOTS = '--kernel {path} is {value} {arch} kernel; --machine {machine} boots {arch2}'
GUEST_IMAGE_KERNEL = '--kernel {path}: {strerror}'
GUEST_IMAGE_KERNEL_NOT_KERNEL_IMAGE_2 = '--kernel {path} is not a kernel image (a truncated ELF file)'
GUEST_IMAGE_KERNEL_ELF_FILE_BUT = "--kernel {path} is an ELF file but not a Linux kernel (no 'Linux version')"
GUEST_IMAGE_KERNEL_BIG_ENDIAN_PPC64 = '--kernel {path} is a big-endian ppc64 kernel; guest boots ppc64le'
GUEST_IMAGE_KERNEL_X86_VMLINUX_ELF = '--kernel {path} is an x86_64 vmlinux (ELF): give the bzImage'
GUEST_IMAGE_KERNEL_ARM64_VMLINUX_ELF = '--kernel {path} is an arm64 vmlinux (ELF): give the Image'
GUEST_IMAGE_KERNEL_CUT_OFF_ELF = '--kernel {path} is cut off: its ELF program headers end at {end}'
GUEST_IMAGE_KERNEL_CUT_OFF_ELF_2 = '--kernel {path} is cut off: ELF segment {k} ends at byte {value}, file has {size}'

# ---- measure.guest_initramfs ----

GUEST_INITRAMFS_INITRD = '--initrd {path}: {strerror}'
GUEST_INITRAMFS_BUILDING_STATIC_ATSD_FAILED = 'building the static {arch} atsd with {cc} failed: {last}'

# ---- measure.plan ----

PLAN_UNTIL_RUNS_RULE_ADDS = '--until with --runs {runs}: a CI over sub-runs needs two: give --runs 2+ (or leave it out)'
PLAN_CHOSEN_BY_CHECK = '{field} is chosen by the plan check; give {give}'

# ---- render.plot ----

PLOT_PLOT_OUTPUT_EXTENSION_MUST = 'plot output {path}: the extension must be .png, .svg or .pdf'
PLOT_PLOT_NEEDS_MATPLOTLIB_WHICH = "plot needs matplotlib, which is not installed: pip install 'atsdbench[plot]'"
PLOT_NO_MEASURED_PASS_HAS = '{path}: no measured pass has a rate (gbps): nothing to plot'

# ---- render.tables ----

TABLES_STRIDE_HAS_SINGLE_ROUND = 'a stride has a single round: its spread ignores between-round variance'
TABLES_NO_THREADS_AXIS = '{name}: no threads axis of 2 or more thread counts (--threads 1,2,4 measures one)'

# ---- units ----

# the words of csrc/atsd_plan.c's size parser, kept alike (tests/test_units.py)
UNITS_NOT_SIZE_WHOLE_NUMBER = "{what} '{cut}' is not a size (a whole number, optional K, M, G or T: binary, 1G = 2^30)"
UNITS_SIZES_ARE_BINARY_WRITE = ("{what} '{cut}': sizes are binary: write {number}{unit} or {number}{unit}iB "
                                "(2^{shift}), not {unit}B (10^{value} to many)")
UNITS_TOO_LARGE_SIZE_MUST = "{what} '{cut}' is too large (a size must fit in 64 bits)"
UNITS_MUST_NOT_ZERO = '{what} must not be zero'
UNITS_NO_GIVEN = 'no {what} given'

# ---- written by hand: several places, or a choice between two ----

CMP_ONE_SIDE_REPLICATED = 'replicate runs on one side only: a single run is one observation'
CMP_ONE_SIDE_REPLICATED_STUDENT = "replicate runs on one side only: a single run is one observation (Student's t)"
CMP_NO_STRIDE_IN_COMMON = "the files have no stride in common"
CMP_NO_CELL_STRIDE_IN_COMMON = "the files have no (cell, stride) in common"
UNNAMED = "the file"  # a result that came from no file (the Python API)
MODEL_NOTHING_TO_FIT = "nothing to fit: {why}"
MODEL_NO_LINE_MARK = "no per-page line"  # in the warnings that say why
MODEL_NO_LINE = "{where}: no per-page line: needs per-page strides at 2+ page counts ({have})"
MODEL_NO_WHOLE_FLUSH = "{where}: no whole-flush stride (no crossover): measure strides above the ceiling"
MODEL_NO_WHOLE_FLUSH_SEEN = "{where}: no whole flush seen: on x86 4K only --trace or the ceiling finds one"
MODEL_WHOLE_FLUSH_RISES = "{where}: whole-flush cost rises with pages ({low} -> {high} us): see residuals"
GUEST_HUNG = "the guest hung: killed after {timeout:g} s{what}"
GUEST_BEFORE_COMMAND = " before the command finished"
GUEST_NO_INIT = "the kernel did not reach /init (qemu exit {rc}{qemu})"
GUEST_KERNEL_SAID = "; the kernel said {said!r}"
GUEST_ATSD_CUT_OFF = "the guest stopped before atsd's output was complete"
GUEST_ATSD_FAILED = "atsd in the guest failed: {why}"
GUEST_COMMAND_CUT_OFF = "the guest stopped before the command finished"
RESULTS_ON_STDOUT = "the result was written to stdout above"
RESULTS_LOST = "no stdout either: the result is lost"
RESULTS_NO_SAMPLES = '{path} has no samples'
RESULTS_NO_VERSION = "{path} has no schema_version (a whole number from 1)"
RESULTS_NOT_A_VERSION = '{path}: schema_version {cut} is not a version (a whole number from 1)'
NOT_DIRECTORY = "not a directory"
GUEST_TRACE_HINT = "; use --tracepoints EVENT,..."
GUEST_O_NOT_DIRECTORY = "-o {path}{probe} is {kind}, not a directory"
GUEST_O_CANNOT_MAKE = "-o {path}: cannot make it in {probe}: {denied}"
GUEST_O_CANNOT_WRITE = "-o {path}: cannot write in it: {denied}"
CMD_NOTHING_WRITTEN = "no pass finished; nothing written"
CMD_GUEST_NO_BOOT = "guest {label}: could not boot: {why}{where}"
CMD_GUEST_CONSOLE = "the whole console: {console}"
CMD_GUEST_NO_CONSOLE = "no console kept"
FILES_LEFT_BEHIND = "{path} was left behind: {what}; kept as {name}"
FILES_LEFT_WHOLE = "a complete file (its writer was killed)"
FILES_LEFT_PART = "an incomplete file ({size} bytes; its writer was killed)"

# ---- errors: the compiled core missing or stale, and the way out (a path: may pass 100 columns) ----

CORE_PROBLEM = "compiled core {why} {where}, {hint}"
CORE_MISSING = "missing in"
CORE_NOT_LOADING = "does not load ({error}) in"
CORE_STALE = "compiled core in {where} is stale (ABI {found}, this atsdbench expects {expected}), {hint}"
CORE_IN_CHECKOUT = ("a source tree: build it with `pip install -e {checkout}`, or run from another directory to use "
                    "the installed atsdbench")
CORE_REINSTALL = "reinstall with `pip install --force-reinstall --no-deps {what}`"
GUEST_MODULE_UNREADABLE = '--module {path}: {strerror}'
GUEST_MODULE_NOT_ELF = '--module {path} is not a kernel module (no ELF header)'
ATSD_OUTPUT_CONFIG_DEVICE = '{name}: config device={value!r} is not a list of {devices}'
