#pragma once
// Slurm's topology.conf for the block plugin (topology/block, Slurm 23.11+; topology.conf(5)):
//   BlockName=rack01 Nodes=gb200-[001-018]
//   BlockName=rack02 Nodes=gb200-[019-036]
//   BlockSizes=18,36
// Slurm describes GB200 / GB300 NVL72 racks this way: each block is the set of nodes (compute
// trays) one NVLink domain joins. parseSlurmBlocks() reads the blocks as a two-level switch
// tree, one leaf per block and, for several blocks, a root above them (the scale-out fabric
// Slurm leaves implicit), so that the importer builds nodes -> NVLink block -> scale-out
// (ClusterImport.cpp; docs/formats.md, "Importing clusters"). Every error names the file and
// line: an unknown key, a line without BlockName, a block defined twice, a node in two
// blocks, an empty or unreadable hostlist, BlockSizes that are not whole numbers.
#include "Result.h"
#include "SlurmTopology.h"

#include <string>

namespace nest {

// Whether `text` is a block-plugin file (a BlockName= outside comments).
bool looksLikeSlurmBlocks(const std::string &text);

// The blocks as a SlurmTopology: switch i is block i (its nodes), then, with two blocks or
// more, a root named "scale-out" listing them all.
Result<SlurmTopology> parseSlurmBlocks(const std::string &text, const std::string &origin);

} // namespace nest
